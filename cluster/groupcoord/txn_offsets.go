package groupcoord

// Transactional offset commits (TxnOffsetCommit), as Kafka's
// GroupMetadataManager: the offsets are written at once, acks=all, as a
// transactional batch of the producer (its id and epoch, the transactional
// flag) to the group's __consumer_offsets partition, and held in the
// coordinator, keyed by producer id, until the transaction's marker
// reaches that partition (WriteTxnMarkers): a COMMIT applies them, an
// ABORT drops them. A coordinator loading the partition settles them the
// same way from the markers in the log; those still open stay pending.
//
// The log checks the batch as any transactional write: a producer fenced
// by a newer epoch (its markers reached the partition) is refused.

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/cluster/coordinator"
	"github.com/kbroker/kbroker/cluster/group"
	"github.com/kbroker/kbroker/internal/wallclock"
	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/storage"
	"github.com/kbroker/kbroker/wire/record"
)

// TxnCommitOffsets validates a TxnOffsetCommit, writes its offsets as
// producerID's transactional batch and, once replicated, holds them for
// the transaction. done gets one error per entry of offsets; it may run
// before TxnCommitOffsets returns.
func (c *Coordinator) TxnCommitOffsets(groupID string, producerID int64, epoch int16, by CommitMember, offsets []PartitionOffset, done func([]error)) {
	errs := make([]error, len(offsets))
	failAll := func(err error) {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
	}
	if groupID == "" {
		failAll(kerr.InvalidGroupID)
		done(errs)
		return
	}
	now := time.Now()
	c.mu.Lock()
	g, err := c.groupLocked(groupID, true)
	if err == nil && (by.Generation >= 0 || by.MemberID != "") {
		// KIP-447: a member of a generation is checked as for a commit
		// (a consumer group member by its member epoch).
		if cg := g.Consumer(); cg != nil {
			err = cg.ValidateCommit(by.MemberID, by.Generation, -1, true)
		} else {
			err = g.ValidateCommit(by.MemberID, by.InstanceID, by.Generation, now)
		}
	}
	if err != nil {
		c.mu.Unlock()
		failAll(err)
		done(errs)
		return
	}
	accepted, recs := offsetRecords(groupID, offsets, now, errs)
	p := c.PartitionFor(groupID)
	c.mu.Unlock()
	if len(recs) == 0 {
		done(errs)
		return
	}
	c.storeTxn(p, producerID, epoch, recs, func(err error) {
		if err != nil {
			failAll(err)
			done(errs)
			return
		}
		c.mu.Lock()
		if c.isCurrentLocked(g) {
			c.addPendingLocked(producerID, groupID, accepted)
		}
		c.mu.Unlock()
		done(errs)
	})
}

// addPendingLocked holds offsets of groupID for producerID's transaction.
func (c *Coordinator) addPendingLocked(producerID int64, groupID string, offsets map[group.TopicPartition]group.Offset) {
	if c.mu.pendingTxn == nil {
		c.mu.pendingTxn = map[int64]map[string]map[group.TopicPartition]group.Offset{}
	}
	byGroup := c.mu.pendingTxn[producerID]
	if byGroup == nil {
		byGroup = map[string]map[group.TopicPartition]group.Offset{}
		c.mu.pendingTxn[producerID] = byGroup
	}
	if byGroup[groupID] == nil {
		byGroup[groupID] = map[group.TopicPartition]group.Offset{}
	}
	for tp, o := range offsets {
		byGroup[groupID][tp] = o
	}
}

// producerStateReplica is the part of a replica that knows its producers'
// sequences (a replicated partition; the coordinator's test fakes have
// none, which reads as a producer new to the partition).
type producerStateReplica interface {
	ProducerState(producerID int64) (epoch int16, lastSeq int32, ok bool)
}

// storeTxn appends recs to partition p as producerID's transactional
// batch and calls done once replicated. Only the coordinator writes this
// producer's batches to p, so the next sequence comes from the log.
func (c *Coordinator) storeTxn(p int32, producerID int64, epoch int16, recs []record.Record, done func(error)) {
	tp := replication.TopicPartition{Topic: OffsetsTopic, Partition: p}
	part, err := c.host.OffsetsReplica(p)
	if err != nil || !part.IsLeader() {
		done(kerr.NotCoordinator)
		return
	}
	seq := int32(0)
	if ps, ok := part.(producerStateReplica); ok {
		if e, last, known := ps.ProducerState(producerID); known && e == epoch && last >= 0 {
			seq = record.IncrementSequence(last, 1)
		}
	}
	now := time.Now()
	for i := range recs {
		recs[i].OffsetDelta = int32(i)
	}
	batch, err := record.Build(record.BatchSpec{
		Attributes:    record.TransactionalFlag,
		BaseTimestamp: wallclock.NowMs(),
		ProducerID:    producerID, ProducerEpoch: epoch, BaseSequence: seq,
	}, recs)
	if err != nil {
		done(kerr.UnknownServerError)
		return
	}
	lastOffset, err := part.AppendAsLeader(batch)
	if err != nil {
		if errors.Is(err, storage.ErrInvalidProducerEpoch) {
			done(kerr.ProducerFenced)
			return
		}
		done(coordinator.StoreError(err))
		return
	}
	op := &coordinator.DelayedStore{Replica: part, LastOffset: lastOffset, Done: done}
	c.waiters.TryCompleteElseWatch(op, now.Add(offsetCommitTimeout), tp)
}

// MarkUnstable sets UNSTABLE_OFFSET_COMMIT (and offset -1) on the
// partitions of got whose offset a transaction of groupID holds (KIP-447:
// a consumer asking with RequireStable waits until the marker decided).
func (c *Coordinator) MarkUnstable(groupID string, got []FetchedTopic) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, byGroup := range c.mu.pendingTxn {
		pending := byGroup[groupID]
		if len(pending) == 0 {
			continue
		}
		for ti := range got {
			for pi := range got[ti].Partitions {
				fo := &got[ti].Partitions[pi]
				if _, ok := pending[group.TopicPartition{Topic: got[ti].Topic, Partition: fo.Partition}]; ok {
					fo.Err = kerr.UnstableOffsetCommit
					fo.Offset = group.Offset{Offset: -1, LeaderEpoch: -1}
				}
			}
		}
	}
}

// dropPendingLocked forgets the transactional offsets of the groups of
// partition p when this broker stops coordinating them.
func (c *Coordinator) dropPendingLocked(p int32) {
	n := c.numPartitions()
	for pid, byGroup := range c.mu.pendingTxn {
		for id := range byGroup {
			if coordinator.PartitionFor(id, n) == p {
				delete(byGroup, id)
			}
		}
		if len(byGroup) == 0 {
			delete(c.mu.pendingTxn, pid)
		}
	}
}

// CompleteTxnOffsets applies producerID's marker, just written to
// partition p, to the pending offsets of p's groups: a commit applies
// them (they are in the log already), an abort drops them.
func (c *Coordinator) CompleteTxnOffsets(p int32, producerID int64, commit bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.numPartitions()
	byGroup := c.mu.pendingTxn[producerID]
	for id, offsets := range byGroup {
		if coordinator.PartitionFor(id, n) != p {
			continue
		}
		delete(byGroup, id)
		if g := c.mu.groups[id]; commit && g != nil {
			g.CommitOffsets(offsets)
		}
	}
	if len(byGroup) == 0 {
		delete(c.mu.pendingTxn, producerID)
	}
}
