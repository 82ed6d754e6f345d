package storage

import (
	"errors"
	"fmt"

	"github.com/kbroker/kbroker/storage/integrity"
	"github.com/kbroker/kbroker/wire/record"
)

// OffsetOfMaxTimestamp returns the offset and timestamp of the record
// with the largest timestamp among offsets in [log start offset,
// upperBound) (the first such record on ties), for ListOffsets'
// MAX_TIMESTAMP (KIP-734). found is false for an empty range. upperBound
// works at batch granularity (it is meant to be the high watermark, a
// batch boundary): a batch starting below it counts whole.
//
// Segments wholly below upperBound answer from their tracked max
// timestamp; only the segment holding upperBound (and one whose max batch
// straddles the log start offset) has its batch headers scanned.
func (l *Log) OffsetOfMaxTimestamp(upperBound int64) (offset, timestamp int64, found bool, err error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.mu.closed {
		return 0, 0, false, fmt.Errorf("offset of max timestamp %s: %w", l.Dir(), l.closedErrLocked())
	}
	start := l.mu.logStartOffset
	var (
		best     record.Batch
		bestSeg  *segment
		bestLast int64 // last offset of the best batch when known only from a segment's tracking
		bestTs   int64 = -1
		haveBest bool
	)
	consider := func(s *segment, ts, lastOffset int64, b record.Batch) {
		if !haveBest || ts > bestTs {
			haveBest, bestTs, bestSeg, bestLast = true, ts, s, lastOffset
			best = append(best[:0], b...)
		}
	}
	for i, s := range l.mu.segments {
		if s.base >= upperBound {
			break
		}
		if s.size == 0 {
			continue
		}
		whole := i+1 < len(l.mu.segments) && l.mu.segments[i+1].base <= upperBound
		if whole && s.offsetOfMaxTimestamp >= start && s.base >= start {
			consider(s, s.maxTimestamp, s.offsetOfMaxTimestamp, nil)
			continue
		}
		if whole && s.maxTimestamp < bestTs {
			continue // cannot win
		}
		sc := integrity.NewScanner(s.log, 0, s.size)
		for {
			b, _, ok := sc.Next()
			if !ok || b.BaseOffset() >= upperBound {
				break
			}
			if b.LastOffset() < start {
				continue
			}
			consider(s, b.MaxTimestamp(), b.LastOffset(), b)
		}
		if sc.Err() != nil {
			return 0, 0, false, fmt.Errorf("offset of max timestamp %s: %w", l.Dir(), sc.Err())
		}
	}
	if !haveBest {
		return 0, 0, false, nil
	}
	if len(best) == 0 {
		// Known from the segment's tracking: read that batch.
		pos, found, err := l.locateLocked(bestSeg, bestLast)
		if err != nil || !found {
			return 0, 0, false, fmt.Errorf("offset of max timestamp %s: batch ending at %d: %w", l.Dir(), bestLast, errors.Join(err, ErrCorrupt))
		}
		_, size, err := bestSeg.readHeader(pos)
		if err != nil {
			return 0, 0, false, fmt.Errorf("offset of max timestamp %s: %w", l.Dir(), err)
		}
		best = make([]byte, size)
		if _, err := bestSeg.log.ReadAt(best, pos); err != nil {
			return 0, 0, false, fmt.Errorf("offset of max timestamp %s: %w: %v", l.Dir(), ErrStorage, err)
		}
	}
	offset, timestamp = max(best.BaseOffset(), start), best.MaxTimestamp()
	if best.LogAppendTime() {
		return offset, timestamp, true, nil
	}
	err = record.IterateCompacted(best, maxUncompressedForTimestamp, func(r *record.Record) error {
		o := best.BaseOffset() + int64(r.OffsetDelta)
		if o >= start && best.BaseTimestamp()+r.TimestampDelta == best.MaxTimestamp() {
			offset = o
			return errStopIterate
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStopIterate) {
		return 0, 0, false, fmt.Errorf("offset of max timestamp %s: %w", l.Dir(), err)
	}
	return offset, timestamp, true, nil
}
