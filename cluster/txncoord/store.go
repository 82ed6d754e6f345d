package txncoord

// Writes to __transaction_state: one record per state change, appended as
// leader with acks=all and acknowledged once the high watermark passes
// it, as the group coordinator's writes (package groupcoord).

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/cluster/coordinator"
	"github.com/kbroker/kbroker/cluster/txn"
	"github.com/kbroker/kbroker/internal/wallclock"
	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/wire/record"
)

// store writes id's metadata m (nil: a tombstone) to partition p and
// calls done once replicated, or with NOT_COORDINATOR or
// COORDINATOR_NOT_AVAILABLE. The caller must not hold c.mu.
func (c *Coordinator) store(p int32, id string, m *txn.Metadata, done func(error)) {
	tp := replication.TopicPartition{Topic: StateTopic, Partition: p}
	part, err := c.host.StateReplica(p)
	if err != nil || !part.IsLeader() {
		done(kerr.NotCoordinator)
		return
	}
	rec := record.Record{Key: txn.Key(id)}
	if m != nil {
		rec.Value = txn.Value(stamped(m))
	}
	now := time.Now()
	batch, err := record.Build(record.BatchSpec{
		BaseTimestamp: wallclock.NowMs(),
		ProducerID:    -1, ProducerEpoch: -1, BaseSequence: -1,
	}, []record.Record{rec})
	if err != nil {
		done(kerr.UnknownServerError)
		return
	}
	lastOffset, err := part.AppendAsLeader(batch)
	if err != nil {
		c.logger.Debug("writing transaction state", "transactional.id", id, "err", err)
		done(coordinator.StoreError(err))
		return
	}
	op := &coordinator.DelayedStore{Replica: part, LastOffset: lastOffset, Done: done}
	c.waiters.TryCompleteElseWatch(op, now.Add(txnStateWriteTimeout), tp)
}
