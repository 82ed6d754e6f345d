package integrity

import (
	"errors"
	"fmt"

	"github.com/kbroker/kbroker/wire/record"
)

// The sentinels package storage re-exports (its ErrStorage and
// ErrCorrupt): defined here so that the Scanner's errors are storage's.
var (
	// ErrCorrupt: CORRUPT_MESSAGE (bad CRC, impossible sizes).
	ErrCorrupt = errors.New("storage: corrupt message")
	// ErrStorage: KAFKA_STORAGE_ERROR, an I/O operation failed.
	ErrStorage = errors.New("storage: I/O error")
	// ErrCorruptSegment is a batch already stored in a segment that fails
	// its check: the disk, not the request, is at fault. It wraps
	// ErrCorrupt; clients get KAFKA_STORAGE_ERROR for it (the replica
	// stops serving the partition and leadership moves), not the
	// CORRUPT_MESSAGE of a produce request with a bad CRC.
	ErrCorruptSegment = fmt.Errorf("%w: a stored batch fails its check", ErrCorrupt)
)

// CorruptBatchError names a stored batch that fails its check. It wraps
// ErrCorruptSegment.
type CorruptBatchError struct {
	// Segment is the .log file's path; set by the log, which knows it.
	Segment string
	// Position is the batch's byte position in the segment.
	Position int64
	// Offset is the first offset the batch may hold: the offset the read
	// asked for, or the one after the last good batch before it. A
	// replica truncated to it drops the batch (and what follows) and
	// fetches it again from the leader.
	Offset int64
	// Reason says what failed: the CRC (stored and computed), the size or
	// the magic byte.
	Reason string
}

func (e *CorruptBatchError) Error() string {
	return fmt.Sprintf("%v: %s at position %d of %s (offset %d)", ErrCorruptSegment, e.Reason, e.Position, e.Segment, e.Offset)
}

func (e *CorruptBatchError) Unwrap() error { return ErrCorruptSegment }

// Check returns a *CorruptBatchError when the stored batch b, at position
// pos of its segment and expected to hold offsets from next on, fails its
// CRC; nil otherwise. The CRC (CRC-32C) covers everything from the
// attributes on; baseOffset and partitionLeaderEpoch, which lie outside
// it, are checked by the callers that know what they must be.
func Check(b record.Batch, pos, next int64) error {
	if stored, computed := b.CRC(), b.ComputeCRC(); stored != computed {
		return &CorruptBatchError{Position: pos, Offset: next,
			Reason: fmt.Sprintf("CRC mismatch (stored %08x, computed %08x)", stored, computed)}
	}
	return nil
}
