package cluster

// Writes to __consumer_offsets: one uncompressed batch appended as leader
// and acknowledged once the high watermark passes it (acks=all), waited
// for in the coordinator's purgatory, never under its lock.

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/storage"
	"github.com/kbroker/kbroker/wire/record"
)

// store appends recs to partition p with acks=all and calls done once the
// high watermark passed them, or with the Kafka error a group request
// gets: NOT_COORDINATOR when leadership moved, COORDINATOR_NOT_AVAILABLE
// when the ISR is too small or replication timed out. done may run on this
// goroutine; the caller must not hold c.mu (done takes it, and the append
// runs the high watermark hook).
func (c *groupCoordinator) store(p int32, recs []record.Record, done func(error)) {
	tp := replication.TopicPartition{Topic: offsetsTopic, Partition: p}
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
		BaseTimestamp: now.UnixMilli(),
		ProducerID:    -1, ProducerEpoch: -1, BaseSequence: -1,
	}, recs)
	if err != nil {
		done(kerr.UnknownServerError)
		return
	}
	lastOffset, err := part.AppendAsLeader(batch)
	if err != nil {
		done(storeError(err))
		return
	}
	op := &delayedStore{part: part, lastOffset: lastOffset, done: done}
	c.waiters.TryCompleteElseWatch(op, now.Add(offsetCommitTimeout), tp)
}

// storeError maps an append error as Kafka's GroupMetadataManager does.
func storeError(err error) error {
	switch {
	case errors.Is(err, replication.ErrNotLeader), errors.Is(err, storage.ErrStorage), errors.Is(err, storage.ErrClosed):
		return kerr.NotCoordinator
	case errors.Is(err, replication.ErrNotEnoughReplicas), errors.Is(err, replication.ErrUnknownTopicOrPartition):
		return kerr.CoordinatorNotAvailable
	case errors.Is(err, storage.ErrMessageTooLarge), errors.Is(err, record.ErrTooLarge):
		return kerr.InvalidCommitOffsetSize
	}
	return kerr.UnknownServerError
}

// delayedStore waits for the high watermark to pass a coordinator write.
type delayedStore struct {
	part       offsetsReplica
	lastOffset int64
	done       func(error)
}

func (d *delayedStore) TryComplete() bool {
	switch {
	case !d.part.IsLeader():
		d.done(kerr.NotCoordinator)
	case d.part.HighWatermark() > d.lastOffset:
		d.done(nil)
	default:
		return false
	}
	return true
}

func (d *delayedStore) OnExpire() { d.done(kerr.CoordinatorNotAvailable) }
