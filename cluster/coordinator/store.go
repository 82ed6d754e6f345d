package coordinator

// Writes to a coordinator's state topic: appended as leader, acknowledged
// once the high watermark passes them (acks=all), waited for in the
// coordinator's purgatory.

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/storage"
	"github.com/kbroker/kbroker/wire/record"
)

// OffsetsReplica is this broker's replica of one partition of a
// coordinator's state topic. Its methods take only the replica's own
// locks, so a coordinator may call the read-only ones under its lock;
// AppendAsLeader and ReadLog never under it.
type OffsetsReplica interface {
	IsLeader() bool
	LeaderEpoch() int32
	LogStartOffset() int64
	LogEndOffset() int64
	HighWatermark() int64
	// ReadLog reads whole batches from offset, below upperBound, at most
	// maxBytes (at least one batch).
	ReadLog(offset int64, maxBytes int, upperBound int64) ([]byte, error)
	// AppendAsLeader appends batch with acks=all semantics (the ISR must
	// be at least min.insync.replicas) and returns its last offset. It
	// runs the high watermark hook, which checks the coordinators'
	// purgatories.
	AppendAsLeader(batch record.Batch) (lastOffset int64, err error)
}

// StoreError maps an append error as Kafka's GroupMetadataManager does.
func StoreError(err error) error {
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

// DelayedStore waits, in a coordinator's purgatory, for the high
// watermark to pass a coordinator write. Done is called exactly once,
// by the purgatory, with the coordinator's lock not held.
type DelayedStore struct {
	Replica    OffsetsReplica
	LastOffset int64
	Done       func(error)
}

func (d *DelayedStore) TryComplete() bool {
	switch {
	case !d.Replica.IsLeader():
		d.Done(kerr.NotCoordinator)
	case d.Replica.HighWatermark() > d.LastOffset:
		d.Done(nil)
	default:
		return false
	}
	return true
}

func (d *DelayedStore) OnExpire() { d.Done(kerr.CoordinatorNotAvailable) }
