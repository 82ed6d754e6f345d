package share

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
)

// The share-partition state is kept as records of an internal compacted
// topic, one key per (group, topic id, partition), whose latest value is
// the partition's Snapshot (the shape of Kafka's ShareSnapshotKey and
// ShareSnapshotValue of __share_group_state). Key and value start with a
// version; a version this build does not know is refused, never misread.
const (
	snapshotKeyType      int16 = 0
	snapshotValueVersion int16 = 0
)

// ErrUnknownRecord is a record of the share state topic this build cannot
// read: written by a newer build, or corrupt.
var ErrUnknownRecord = errors.New("share: unknown share state record")

// StateKey identifies one share-partition's state.
type StateKey struct {
	Group     string
	TopicID   [16]byte
	Partition int32
}

// EncodeKey is the record key of k.
func EncodeKey(k StateKey) []byte {
	b := kbin.AppendInt16(nil, snapshotKeyType)
	b = kbin.AppendCompactString(b, k.Group)
	b = kbin.AppendUuid(b, k.TopicID)
	b = kbin.AppendInt32(b, k.Partition)
	return kbin.AppendUvarint(b, 0) // tagged fields
}

// DecodeKey reads a record key written by EncodeKey.
func DecodeKey(b []byte) (StateKey, error) {
	r := kbin.Reader{Src: b}
	if t := r.Int16(); !r.Ok() || t != snapshotKeyType {
		return StateKey{}, fmt.Errorf("%w: key type %d", ErrUnknownRecord, t)
	}
	k := StateKey{Group: r.CompactString(), TopicID: r.Uuid(), Partition: r.Int32()}
	skipTags(&r)
	if err := complete(&r); err != nil {
		return StateKey{}, fmt.Errorf("%w: key: %v", ErrUnknownRecord, err)
	}
	return k, nil
}

// EncodeSnapshot is the record value of s, with the leader epoch of the
// partition when it was written.
func EncodeSnapshot(s Snapshot, leaderEpoch int32) []byte {
	b := kbin.AppendInt16(nil, snapshotValueVersion)
	b = kbin.AppendInt32(b, s.StateEpoch)
	b = kbin.AppendInt32(b, leaderEpoch)
	b = kbin.AppendInt64(b, s.StartOffset)
	b = kbin.AppendCompactArrayLen(b, len(s.Batches))
	for _, sb := range s.Batches {
		b = kbin.AppendInt64(b, sb.First)
		b = kbin.AppendInt64(b, sb.Last)
		b = kbin.AppendInt8(b, int8(sb.State))
		b = kbin.AppendInt16(b, int16(min(sb.DeliveryCount, 1<<15-1)))
		b = kbin.AppendUvarint(b, 0)
	}
	return kbin.AppendUvarint(b, 0)
}

// stateBatchBytes is the least a state batch takes: two offsets, a
// state, a count and an empty tag section.
const stateBatchBytes = 8 + 8 + 1 + 2 + 1

// DecodeSnapshot reads a record value written by EncodeSnapshot, with
// the leader epoch it was written at. The batch count is bounded by the
// bytes that hold them, so a corrupt value never sizes an allocation;
// Restore checks what the batches mean.
func DecodeSnapshot(b []byte) (Snapshot, int32, error) {
	r := kbin.Reader{Src: b}
	if v := r.Int16(); !r.Ok() || v != snapshotValueVersion {
		return Snapshot{}, 0, fmt.Errorf("%w: value version %d", ErrUnknownRecord, v)
	}
	s := Snapshot{StateEpoch: r.Int32()}
	leaderEpoch := r.Int32()
	s.StartOffset = r.Int64()
	n := r.CompactArrayLen()
	if !r.Ok() || n < 0 || int(n) > len(r.Src)/stateBatchBytes {
		return Snapshot{}, 0, fmt.Errorf("%w: %d state batches in %d bytes", ErrUnknownRecord, n, len(r.Src))
	}
	s.Batches = make([]StateBatch, 0, n)
	for range n {
		sb := StateBatch{First: r.Int64(), Last: r.Int64(), State: RecordState(r.Int8()), DeliveryCount: int32(r.Int16())}
		skipTags(&r)
		s.Batches = append(s.Batches, sb)
	}
	skipTags(&r)
	if err := complete(&r); err != nil {
		return Snapshot{}, 0, fmt.Errorf("%w: value: %v", ErrUnknownRecord, err)
	}
	return s, leaderEpoch, nil
}

// skipTags passes a tagged-field section; each field's size is bounded
// by the bytes left (Span fails the reader otherwise).
func skipTags(r *kbin.Reader) {
	for n := r.Uvarint(); n > 0 && r.Ok(); n-- {
		r.Uvarint()
		r.Span(int(r.Uvarint()))
	}
}

// complete fails a record that ran out of bytes or has bytes left over.
func complete(r *kbin.Reader) error {
	if err := r.Complete(); err != nil {
		return err
	}
	if len(r.Src) != 0 {
		return fmt.Errorf("%d bytes left over", len(r.Src))
	}
	return nil
}
