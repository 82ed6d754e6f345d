package groupcoord

// Writes to __consumer_offsets: one uncompressed batch appended as leader
// and acknowledged once the high watermark passes it (acks=all), waited
// for in the coordinator's purgatory, never under its lock.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/cluster/coordinator"
	"github.com/kbroker/kbroker/internal/wallclock"
	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/wire/record"
)

// store appends recs to partition p with acks=all and calls done once the
// high watermark passed them, or with the Kafka error a group request
// gets: NOT_COORDINATOR when leadership moved, COORDINATOR_NOT_AVAILABLE
// when the ISR is too small or replication timed out. done may run on this
// goroutine; the caller must not hold c.mu (done takes it, and the append
// runs the high watermark hook).
func (c *Coordinator) store(p int32, recs []record.Record, done func(error)) {
	tp := replication.TopicPartition{Topic: OffsetsTopic, Partition: p}
	part, err := c.host.OffsetsReplica(p)
	if err != nil || !part.IsLeader() {
		done(kerr.NotCoordinator)
		return
	}
	now := time.Now()
	for i := range recs {
		recs[i].OffsetDelta = int32(i)
	}
	batch, err := record.Build(record.BatchSpec{
		BaseTimestamp: wallclock.NowMs(),
		ProducerID:    -1, ProducerEpoch: -1, BaseSequence: -1,
	}, recs)
	if err != nil {
		done(kerr.UnknownServerError)
		return
	}
	lastOffset, err := part.AppendAsLeader(batch)
	if err != nil {
		done(coordinator.StoreError(err))
		return
	}
	op := &coordinator.DelayedStore{Replica: part, LastOffset: lastOffset, Done: done}
	c.waiters.TryCompleteElseWatch(op, now.Add(offsetCommitTimeout), tp)
}
