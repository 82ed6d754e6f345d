package storage

import (
	"fmt"
	"time"

	"github.com/kbroker/kbroker/storage/cleaner"
	"github.com/kbroker/kbroker/storage/integrity"
)

// DefaultDedupeBufferSize is Kafka's log.cleaner.dedupe.buffer.size: the
// bytes of the cleaner's key map (cleaner.KeyMap).
const DefaultDedupeBufferSize = cleaner.DefaultDedupeBufferSize

// CleanerLimits are the broker-wide cleaner settings a Manager hands each
// log it cleans.
type CleanerLimits struct {
	// DedupeBufferSize is log.cleaner.dedupe.buffer.size; 0 is
	// DefaultDedupeBufferSize.
	DedupeBufferSize int64
	// IOMaxBytesPerSecond is log.cleaner.io.max.bytes.per.second; 0 or
	// MaxFloat64 is no limit.
	IOMaxBytesPerSecond float64
	// Stop, when closed, ends throttling sleeps (the Manager stopping).
	Stop <-chan struct{}
	// shared is the Manager's throttle (then IOMaxBytesPerSecond is not
	// read); sleep replaces the throttle's sleep in tests.
	shared *cleaner.Throttle
	sleep  func(d time.Duration, stop <-chan struct{})
}

// SetCleanerLimits sets the limits the log's next Clean runs with.
func (l *Log) SetCleanerLimits(lim CleanerLimits) {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	l.cleaner.limits = lim
}

// mapKeys maps the keys of segs from firstDirty on into m until m is
// full, and returns the offset mapping stopped at: the offset after the
// last batch mapped, which is where this pass's cleaning ends. Control
// batches, batches of aborted transactions (which must not supersede
// committed records) and undecodable batches are skipped.
// A batch with more records than the whole map holds is an error, as
// Kafka refuses a dedupe buffer too small for one segment.
func (l *Log) mapKeys(m *cleaner.KeyMap, segs []cleanSeg, firstDirty, cleanableEnd int64, aborted cleaner.AbortedRanges, th *cleaner.Throttler) (mapEnd int64, full bool, err error) {
	mapEnd = firstDirty
	for _, cs := range segs {
		if cs.end <= firstDirty {
			continue
		}
		sc := integrity.NewScanner(cs.s.log, 0, cs.size)
		for {
			b, pos, ok := sc.Next()
			if !ok {
				break
			}
			th.Add(len(b))
			if b.LastOffset() < firstDirty {
				continue
			}
			if !m.Room(int(b.RecordCount())) {
				if m.Len() == 0 {
					return 0, false, fmt.Errorf("log.cleaner.dedupe.buffer.size holds %d keys, fewer than the %d records of the batch at offset %d", m.Limit(), b.RecordCount(), b.BaseOffset())
				}
				return mapEnd, true, nil
			}
			if !b.IsControl() && !aborted.Aborted(b) {
				if err := m.PutBatch(b, firstDirty); err != nil {
					l.logger.Warn("cleaner skips an undecodable batch", "dir", l.Dir(), "segment", cs.base, "position", pos, "err", err)
				}
			}
			mapEnd = b.LastOffset() + 1
		}
		if sc.Err() != nil {
			return 0, false, fmt.Errorf("scan segment %d: %w", cs.base, sc.Err())
		}
		mapEnd = max(mapEnd, cs.end)
	}
	return min(max(mapEnd, firstDirty), cleanableEnd), false, nil
}

// dirtyBytes is the bytes of segs at or past firstDirty.
func dirtyBytes(segs []cleanSeg, firstDirty int64) int64 {
	var n int64
	for _, cs := range segs {
		if cs.end > firstDirty {
			n += cs.size
		}
	}
	return n
}

// segmentsBelow returns the segments starting below end.
func segmentsBelow(segs []cleanSeg, end int64) []cleanSeg {
	n := 0
	for n < len(segs) && segs[n].base < end {
		n++
	}
	return segs[:n]
}
