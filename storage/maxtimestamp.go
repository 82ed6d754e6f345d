package storage

import (
	"errors"
	"fmt"

	"github.com/kbroker/kbroker/wire/record"
)

// OffsetOfMaxTimestamp returns the offset and timestamp of the record
// with the largest timestamp among offsets below upperBound (the first
// such record on ties), for ListOffsets' MAX_TIMESTAMP (KIP-734). found is
// false for an empty range.
func (l *Log) OffsetOfMaxTimestamp(upperBound int64) (offset, timestamp int64, found bool, err error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.mu.closed {
		return 0, 0, false, fmt.Errorf("offset of max timestamp %s: %w", l.dir, ErrClosed)
	}
	// Batch headers carry maxTimestamp, so only the winning batch needs
	// its records decoded.
	var best record.Batch
	for _, s := range l.mu.segments {
		sc := newBatchScanner(s.log, 0, s.size)
		for {
			b, _, ok := sc.next()
			if !ok || b.BaseOffset() >= upperBound {
				break
			}
			if best == nil || b.MaxTimestamp() > best.MaxTimestamp() {
				best = append(best[:0], b...)
			}
		}
		if sc.err != nil {
			return 0, 0, false, fmt.Errorf("offset of max timestamp %s: %w", l.dir, sc.err)
		}
	}
	if best == nil {
		return 0, 0, false, nil
	}
	if best.LogAppendTime() {
		return best.BaseOffset(), best.MaxTimestamp(), true, nil
	}
	offset, timestamp = best.BaseOffset(), best.MaxTimestamp()
	err = record.Iterate(best, maxUncompressedForTimestamp, func(r *record.Record) error {
		if best.BaseTimestamp()+r.TimestampDelta == best.MaxTimestamp() {
			offset = best.BaseOffset() + int64(r.OffsetDelta)
			return errStopIterate
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStopIterate) {
		return 0, 0, false, fmt.Errorf("offset of max timestamp %s: %w", l.dir, err)
	}
	return offset, timestamp, true, nil
}
