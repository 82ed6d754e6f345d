package cleaner

import (
	"crypto/md5"
	"encoding/binary"

	"github.com/kbroker/kbroker/wire/record"
)

// DefaultDedupeBufferSize is Kafka's log.cleaner.dedupe.buffer.size: the
// bytes of the cleaner's key map.
const DefaultDedupeBufferSize = 128 << 20

// MaxUncompressed bounds decompression while cleaning; a batch past it is
// kept as it is.
const MaxUncompressed = 64 << 20

const (
	// KeySlotBytes is one key map slot: an MD5 of the key and an offset,
	// as Kafka's SkimpyOffsetMap accounts an entry.
	KeySlotBytes = 24
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

// KeyMap maps each key of the dirty section (by its MD5) to its latest
// offset, in a fixed table of open-addressed slots allocated once: its
// memory is its slot count times KeySlotBytes, never more than
// log.cleaner.dedupe.buffer.size. When it is full the cleaner stops
// mapping and cleans up to where it got (a pass); the next pass starts
// there. Not safe for concurrent use.
type KeyMap struct {
	slots []keySlot
	used  int
	limit int // entries allowed before full
}

// NewKeyMap sizes the table for at most bufferBytes, and no larger than
// the dirty section can need: a record takes at least 8 bytes of a
// segment (most take many more; a map that fills early only costs a
// pass).
func NewKeyMap(bufferBytes, dirtyBytes int64) *KeyMap {
	n := max(bufferBytes/KeySlotBytes, 1)
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
	return &KeyMap{slots: make([]keySlot, n), limit: max(limit, 1)}
}

// Bytes is the table's memory.
func (m *KeyMap) Bytes() int64 { return int64(len(m.slots)) * KeySlotBytes }

// Len is the number of keys mapped.
func (m *KeyMap) Len() int { return m.used }

// Limit is the number of keys the map holds before it is full.
func (m *KeyMap) Limit() int { return m.limit }

// Room reports whether n more keys surely fit.
func (m *KeyMap) Room(n int) bool { return m.used+n <= m.limit }

func (m *KeyMap) find(key []byte) (*keySlot, [md5.Size]byte) {
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

// Put maps key to off (the latest wins: offsets come in increasing
// order). The caller checked Room.
func (m *KeyMap) Put(key []byte, off int64) {
	s, h := m.find(key)
	if s.off == 0 {
		if m.used >= len(m.slots)-1 {
			return // cannot happen after Room; never fill the last slot
		}
		m.used++
		s.hash = h
	}
	s.off = off + 1
}

// Get returns key's latest mapped offset.
func (m *KeyMap) Get(key []byte) (int64, bool) {
	s, _ := m.find(key)
	if s.off == 0 {
		return 0, false
	}
	return s.off - 1, true
}

// PutBatch maps the keys of b's records at or past firstDirty. The caller
// checked Room for b's record count and skipped control batches and those
// of aborted transactions. An error is an undecodable batch, of which
// nothing or part was mapped.
func (m *KeyMap) PutBatch(b record.Batch, firstDirty int64) error {
	base := b.BaseOffset()
	return record.IterateCompacted(b, MaxUncompressed, func(r *record.Record) error {
		if off := base + int64(r.OffsetDelta); r.Key != nil && off >= firstDirty {
			m.Put(r.Key, off)
		}
		return nil
	})
}
