package storage

import (
	"crypto/md5"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/kbroker/kbroker/wire/record"
)

// DefaultDedupeBufferSize is Kafka's log.cleaner.dedupe.buffer.size: the
// bytes of the cleaner's key map.
const DefaultDedupeBufferSize = 128 << 20

const (
	// keySlotBytes is one key map slot: an MD5 of the key and an offset,
	// as Kafka's SkimpyOffsetMap accounts an entry.
	keySlotBytes = 24
	// keyMapLoadFactor is the share of slots the map fills before it
	// reports full (Kafka's log.cleaner.io.buffer.load.factor default).
	keyMapLoadFactor = 0.9
	// minKeyMapSlots keeps a tiny dirty section from a degenerate table.
	minKeyMapSlots = 64
)

// keySlot is one slot; off is the offset plus one, 0 for an empty slot.
type keySlot struct {
	hash [md5.Size]byte
	off  int64
}

// keyMap maps each key of the dirty section (by its MD5) to its latest
// offset, in a fixed table of open-addressed slots allocated once: its
// memory is its slot count times keySlotBytes, never more than
// log.cleaner.dedupe.buffer.size. When it is full the cleaner stops
// mapping and cleans up to where it got (a pass); the next pass starts
// there.
type keyMap struct {
	slots []keySlot
	used  int
	limit int // entries allowed before full
}

// newKeyMap sizes the table for at most bufferBytes, and no larger than
// the dirty section can need: a record takes at least 8 bytes of a
// segment (most take many more; a map that fills early only costs a
// pass).
func newKeyMap(bufferBytes, dirtyBytes int64) *keyMap {
	n := max(bufferBytes/keySlotBytes, 1)
	if need := dirtyBytes/8 + minKeyMapSlots; need < n {
		n = need
	}
	limit := int(float64(n) * keyMapLoadFactor)
	if limit < 1 {
		limit = 1
	}
	if limit >= int(n) {
		limit = int(n) - 1 // keep an empty slot so that probing ends
	}
	return &keyMap{slots: make([]keySlot, n), limit: max(limit, 1)}
}

// Bytes is the table's memory.
func (m *keyMap) Bytes() int64 { return int64(len(m.slots)) * keySlotBytes }

// Len is the number of keys mapped.
func (m *keyMap) Len() int { return m.used }

// room reports whether n more keys surely fit.
func (m *keyMap) room(n int) bool { return m.used+n <= m.limit }

func (m *keyMap) find(key []byte) (*keySlot, [md5.Size]byte) {
	h := md5.Sum(key)
	i := binary.BigEndian.Uint64(h[:8]) % uint64(len(m.slots))
	for {
		s := &m.slots[i]
		if s.off == 0 || s.hash == h {
			return s, h
		}
		i++
		if i == uint64(len(m.slots)) {
			i = 0
		}
	}
}

// put maps key to off (the latest wins: offsets come in increasing
// order). The caller checked room.
func (m *keyMap) put(key []byte, off int64) {
	s, h := m.find(key)
	if s.off == 0 {
		if m.used >= len(m.slots)-1 {
			return // cannot happen after room; never fill the last slot
		}
		m.used++
		s.hash = h
	}
	s.off = off + 1
}

// get returns key's latest mapped offset.
func (m *keyMap) get(key []byte) (int64, bool) {
	s, _ := m.find(key)
	if s.off == 0 {
		return 0, false
	}
	return s.off - 1, true
}

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
	// read); sleep replaces sleepOrStop in tests.
	shared *throttleState
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
func (l *Log) mapKeys(m *keyMap, segs []cleanSeg, firstDirty, cleanableEnd int64, aborted abortedRanges, th *ioThrottle) (mapEnd int64, full bool, err error) {
	mapEnd = firstDirty
	for _, cs := range segs {
		if cs.end <= firstDirty {
			continue
		}
		sc := newBatchScanner(cs.s.log, 0, cs.size)
		for {
			b, pos, ok := sc.next()
			if !ok {
				break
			}
			th.add(len(b))
			if b.LastOffset() < firstDirty {
				continue
			}
			if !m.room(int(b.RecordCount())) {
				if m.Len() == 0 {
					return 0, false, fmt.Errorf("log.cleaner.dedupe.buffer.size holds %d keys, fewer than the %d records of the batch at offset %d", m.limit, b.RecordCount(), b.BaseOffset())
				}
				return mapEnd, true, nil
			}
			if !b.IsControl() && !aborted.aborted(b) {
				base := b.BaseOffset()
				err := record.IterateCompacted(b, maxUncompressedForCleaning, func(r *record.Record) error {
					if off := base + int64(r.OffsetDelta); r.Key != nil && off >= firstDirty {
						m.put(r.Key, off)
					}
					return nil
				})
				if err != nil {
					l.logger.Warn("cleaner skips an undecodable batch", "dir", l.Dir(), "segment", cs.base, "position", pos, "err", err)
				}
			}
			mapEnd = b.LastOffset() + 1
		}
		if sc.err != nil {
			return 0, false, fmt.Errorf("scan segment %d: %w", cs.base, sc.err)
		}
		mapEnd = max(mapEnd, cs.end)
	}
	return min(max(mapEnd, firstDirty), cleanableEnd), false, nil
}

// ioThrottle holds a cleaning to log.cleaner.io.max.bytes.per.second
// over the bytes it reads and writes, as Kafka's Throttler: when ahead of
// the rate it sleeps until the rate is met.
type ioThrottle struct {
	state *throttleState
	stop  <-chan struct{}
	now   func() time.Time
	sleep func(d time.Duration, stop <-chan struct{})
}

// newIOThrottle returns nil (no throttling) for no limit and no shared
// throttle.
func newIOThrottle(lim CleanerLimits) *ioThrottle {
	st := lim.shared
	if st == nil {
		if unlimitedRate(lim.IOMaxBytesPerSecond) {
			return nil
		}
		st = &throttleState{rate: lim.IOMaxBytesPerSecond, start: time.Now()}
	}
	th := &ioThrottle{state: st, stop: lim.Stop, now: time.Now, sleep: lim.sleep}
	if th.sleep == nil {
		th.sleep = sleepOrStop
	}
	return th
}

// add accounts n bytes and sleeps while the cleanings sharing the
// throttle are ahead of the rate by more than 10 ms of transfer.
func (t *ioThrottle) add(n int) {
	if t == nil {
		return
	}
	s := t.state
	s.mu.Lock()
	if unlimitedRate(s.rate) {
		s.mu.Unlock()
		return
	}
	now := t.now()
	s.bytes += float64(n)
	elapsed := now.Sub(s.start)
	ahead := time.Duration(s.bytes/s.rate*float64(time.Second)) - elapsed
	switch {
	case ahead > 10*time.Millisecond:
		// This sleep pays for the bytes so far: whoever adds next is
		// measured from its end.
		s.start, s.bytes = now.Add(ahead), 0
	case elapsed > throttlePeriod:
		s.start, s.bytes = now, 0
		ahead = 0
	default:
		ahead = 0
	}
	s.mu.Unlock()
	if ahead > 0 {
		t.sleep(ahead, t.stop)
	}
}

func sleepOrStop(d time.Duration, stop <-chan struct{}) {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-stop:
	}
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
