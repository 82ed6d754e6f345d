package kafkaapi

// AddPartitionsToTxn (key 24).
//
// The producer names the partitions it
// is about to write in its transaction; the coordinator records them
// (Ongoing) before the producer may produce to them, so its markers reach
// every one.
//
// Authorization, as Kafka: WRITE on the transactional id (else every
// partition gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and on each topic
// (else TOPIC_AUTHORIZATION_FAILED for its partitions and
// OPERATION_NOT_ATTEMPTED for the others). A partition that does not
// exist gets UNKNOWN_TOPIC_OR_PARTITION and the others
// OPERATION_NOT_ATTEMPTED.
//
// v4 is the broker-to-broker form (KIP-890): several transactions per
// request, and VerifyOnly, which adds nothing and answers whether each
// partition is already in the producer's ongoing transaction
// (INVALID_TXN_STATE if not), as a partition leader asks before it
// accepts a transactional batch (txns_verify.go). It needs CLUSTER_ACTION
// on the cluster, else CLUSTER_AUTHORIZATION_FAILED. v5 only allows
// TRANSACTION_ABORTABLE, which kbroker does not return.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/cluster/txn"
)

func init() {
	register(apiSpec{key: 24, min: 0, max: 5, handle: (*Handlers).handleAddPartitionsToTxn, actions: addPartitionsToTxnActions})
}

func addPartitionsToTxnActions(_ *server.RequestContext, kreq kmsg.Request) []server.Action {
	req := kreq.(*kmsg.AddPartitionsToTxnRequest)
	if req.Version >= 4 {
		return clusterActionActions(nil, kreq)
	}
	out := []server.Action{txnIDAction(req.TransactionalID)}
	return append(out, server.TopicActions(kmsg.ACLOperationWrite, func(yield func(string)) {
		for _, t := range req.Topics {
			yield(t.Topic)
		}
	})...)
}

func (h *Handlers) handleAddPartitionsToTxn(ctx context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.AddPartitionsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if req.Version >= 4 {
		return h.addPartitionsToTxnBatch(ctx, rc, req, resp), nil
	}
	// perPartition answers the partitions: with refused set, those get
	// their own error and the others OPERATION_NOT_ATTEMPTED.
	perPartition := func(all error, refused map[txn.TopicPartition]error) {
		for _, t := range req.Topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition = p
				err := all
				if refused != nil {
					err = kerr.OperationNotAttempted
					if e, ok := refused[txn.TopicPartition{Topic: t.Topic, Partition: p}]; ok {
						err = e
					}
				}
				rp.ErrorCode = errcode.Of(fencedForVersion(err, req.Version, 2))
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
	}
	if !rc.Authorized(kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, req.TransactionalID) {
		perPartition(kerr.TransactionalIDAuthorizationFailed, nil)
		return resp, nil
	}
	img := h.store.Image()
	refused := map[txn.TopicPartition]error{}
	var tps []txn.TopicPartition
	for _, t := range req.Topics {
		allowed := rc.Authorized(kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic, t.Topic)
		for _, p := range t.Partitions {
			tp := txn.TopicPartition{Topic: t.Topic, Partition: p}
			switch _, exists := img.Partition(t.Topic, p); {
			case !allowed:
				refused[tp] = kerr.TopicAuthorizationFailed
			case !exists:
				refused[tp] = kerr.UnknownTopicOrPartition
			default:
				tps = append(tps, tp)
			}
		}
	}
	if len(refused) > 0 {
		perPartition(nil, refused)
		return resp, nil
	}
	perPartition(h.txns.AddPartitions(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, tps), nil)
	return resp, nil
}

// addPartitionsToTxnBatch serves v4+: each transaction on its own, either
// verified (VerifyOnly) or added.
func (h *Handlers) addPartitionsToTxnBatch(ctx context.Context, rc *server.RequestContext, req *kmsg.AddPartitionsToTxnRequest, resp *kmsg.AddPartitionsToTxnResponse) *kmsg.AddPartitionsToTxnResponse {
	if !rc.AuthorizedCluster(kmsg.ACLOperationClusterAction) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp
	}
	for _, t := range req.Transactions {
		rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rt.TransactionalID = t.TransactionalID
		var tps []txn.TopicPartition
		for _, tt := range t.Topics {
			for _, p := range tt.Partitions {
				tps = append(tps, txn.TopicPartition{Topic: tt.Topic, Partition: p})
			}
		}
		var all error
		if !t.VerifyOnly {
			all = h.txns.AddPartitions(ctx, t.TransactionalID, t.ProducerID, t.ProducerEpoch, tps)
		}
		for _, tt := range t.Topics {
			rtt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			rtt.Topic = tt.Topic
			for _, p := range tt.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				rp.Partition = p
				err := all
				if t.VerifyOnly {
					err = h.txns.VerifyPartition(t.TransactionalID, t.ProducerID, t.ProducerEpoch, txn.TopicPartition{Topic: tt.Topic, Partition: p})
				}
				rp.ErrorCode = errcode.Of(err)
				rtt.Partitions = append(rtt.Partitions, rp)
			}
			rt.Topics = append(rt.Topics, rtt)
		}
		resp.Transactions = append(resp.Transactions, rt)
	}
	return resp
}
