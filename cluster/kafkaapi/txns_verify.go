package kafkaapi

// KIP-890 part 1: a partition leader accepts a transactional batch that
// would begin a transaction in the partition only once the transaction
// coordinator confirms the partition is in the producer's ongoing
// transaction. Without the check, a producer whose AddPartitionsToTxn was
// lost (or a zombie) could open a transaction no marker will ever end,
// which would hold the last stable offset back forever.

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/txn"
	"github.com/kbroker/kbroker/cluster/txncoord"
	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/wire/record"
)

// txnVerifyTimeout bounds the round trip to a remote coordinator.
const txnVerifyTimeout = 5 * time.Second

// verifyTxnProduce checks a transactional batch of txnID before it is
// appended to part. A producer already in a transaction in this partition
// needs no check (the log itself checks its epoch).
func (h *Handlers) verifyTxnProduce(ctx context.Context, part *replication.Partition, txnID *string, b record.Batch) error {
	if txnID == nil || !b.IsTransactional() {
		return nil
	}
	pid, epoch := b.ProducerID(), b.ProducerEpoch()
	if first, _, ok := part.Log().ProducerTxnState(pid); ok && first >= 0 {
		return nil
	}
	tp := txn.TopicPartition{Topic: part.TP.Topic, Partition: part.TP.Partition}
	err := h.verifyWithCoordinator(ctx, *txnID, pid, epoch, tp)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, kerr.ProducerFenced), errors.Is(err, kerr.InvalidProducerEpoch):
		return kerr.InvalidProducerEpoch
	case errors.Is(err, kerr.InvalidTxnState), errors.Is(err, kerr.InvalidProducerIDMapping):
		return kerr.InvalidTxnState
	}
	// The coordinator moved, is loading, or could not be reached: a
	// retriable answer, as Kafka gives (NOT_ENOUGH_REPLICAS).
	h.logger.Debug("verifying a transactional produce", "transactional.id", *txnID, "topic", tp.Topic, "partition", tp.Partition, "err", err)
	return kerr.NotEnoughReplicas
}

// verifyWithCoordinator asks txnID's coordinator, this broker or another
// (AddPartitionsToTxn v4 with VerifyOnly), whether tp is in the producer's
// ongoing transaction.
func (h *Handlers) verifyWithCoordinator(ctx context.Context, txnID string, pid int64, epoch int16, tp txn.TopicPartition) error {
	img := h.store.Image()
	mp, ok := img.Partition(txncoord.StateTopic, h.txns.PartitionFor(txnID))
	switch {
	case !ok || mp.Leader == metadata.NoLeader:
		return kerr.CoordinatorNotAvailable
	case mp.Leader == h.cfg.NodeID:
		return h.txns.VerifyPartition(txnID, pid, epoch, tp)
	}
	ep, ok := img.BrokerEndpoint(mp.Leader, h.cfg.InterBrokerListenerName)
	if !ok {
		return kerr.CoordinatorNotAvailable
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 4
	t := kmsg.NewAddPartitionsToTxnRequestTransaction()
	t.TransactionalID, t.ProducerID, t.ProducerEpoch, t.VerifyOnly = txnID, pid, epoch, true
	tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	tt.Topic, tt.Partitions = tp.Topic, []int32{tp.Partition}
	t.Topics = append(t.Topics, tt)
	req.Transactions = append(req.Transactions, t)
	ctx, cancel := context.WithTimeout(ctx, txnVerifyTimeout)
	defer cancel()
	kresp, err := h.txnClients.Request(ctx, mp.Leader, ep, req)
	if err != nil {
		return err
	}
	resp := kresp.(*kmsg.AddPartitionsToTxnResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return err
	}
	for _, rt := range resp.Transactions {
		for _, rtt := range rt.Topics {
			for _, rp := range rtt.Partitions {
				if rtt.Topic == tp.Topic && rp.Partition == tp.Partition {
					return kerr.ErrorForCode(rp.ErrorCode)
				}
			}
		}
	}
	return kerr.InvalidTxnState
}
