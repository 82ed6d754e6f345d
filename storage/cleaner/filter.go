package cleaner

import (
	"math"
	"sort"

	"github.com/kbroker/kbroker/wire/record"
)

// AbortedTxn is an aborted transaction of a producer, from its first
// offset to its ABORT marker (LastOffset), as its .txnindex entry says.
type AbortedTxn struct {
	FirstOffset, LastOffset int64
}

// AbortedRanges answers whether a transactional batch belongs to an
// aborted transaction: per producer, its aborted transactions (from the
// .txnindex entries) as [FirstOffset, marker) ranges, which do not
// overlap as a producer has one transaction at a time. Kafka's cleaner
// tracks the same with the aborted transactions of the cleaned range and
// the control batches it reads.
type AbortedRanges map[int64][]AbortedTxn

// Add records producer pid's aborted transaction a. Sort must follow the
// last Add.
func (r AbortedRanges) Add(pid int64, a AbortedTxn) { r[pid] = append(r[pid], a) }

// Sort orders each producer's ranges by first offset.
func (r AbortedRanges) Sort() {
	for _, list := range r {
		sort.Slice(list, func(i, j int) bool { return list[i].FirstOffset < list[j].FirstOffset })
	}
}

// Aborted reports whether b is data of an aborted transaction.
func (r AbortedRanges) Aborted(b record.Batch) bool {
	if !b.IsTransactional() || b.IsControl() || len(r) == 0 {
		return false
	}
	list := r[b.ProducerID()]
	i := sort.Search(len(list), func(i int) bool { return list[i].FirstOffset > b.BaseOffset() }) - 1
	return i >= 0 && b.LastOffset() < list[i].LastOffset
}

// Counts are what a Filter removed and read, added to the cleaning's
// CleanStats.
type Counts struct {
	RecordsRead       int64
	RecordsRemoved    int64 // superseded records and tombstones dropped
	TombstonesRemoved int64 // of RecordsRemoved, expired tombstones
	MarkersRemoved    int64 // transaction markers dropped
}

// Filter decides, batch by batch in offset order, what a cleaning keeps
// of the segments below its map end. It is one cleaning's: not safe for
// concurrent use, and it remembers per producer whether data was read
// since its last marker, so it must see every batch of the cleaned
// segments in order. It does no I/O and never blocks.
type Filter struct {
	Keys   *KeyMap
	MapEnd int64 // records at and past it were not mapped: kept as they are
	// ProducerLast maps each producer with batches in its state to its
	// last batch's last offset: that record is always kept.
	ProducerLast map[int64]int64
	Aborted      AbortedRanges
	// MarkerOnly maps producers whose state has no batches (their last
	// record may be a marker) to their epoch: markers of that epoch stay.
	MarkerOnly map[int64]int16
	// MarkerLimit is the newest producer snapshot's offset: markers at or
	// past it are kept, as a replay from that snapshot needs them.
	MarkerLimit int64
	// Now is the cleaning time (ms). A batch that keeps a tombstone or a
	// removable marker gets the delete horizon Now + DeleteRetentionMs
	// (Kafka's KIP-534); a later cleaning past it drops them.
	Now, DeleteRetentionMs int64
	// Warn logs a batch kept because it cannot be decoded or rebuilt
	// (slog.Logger.Warn's arguments).
	Warn func(msg string, args ...any)

	Counts
	// txnData marks the producers with data batches read since their
	// last marker: their next marker must stay.
	txnData       map[int64]bool
	removedAborts map[int64]bool // ABORT markers dropped from the current segment, by offset

	recs   []record.Record // kept records of the current batch
	arena  []byte          // their keys and values
	header []record.Header
}

// StartSegment begins a segment: RemovedAbort answers for it from now on.
func (c *Filter) StartSegment() { c.removedAborts = map[int64]bool{} }

// RemovedAbort reports whether the ABORT marker at offset was dropped
// from the current segment: its .txnindex entry must go with it.
func (c *Filter) RemovedAbort(offset int64) bool { return c.removedAborts[offset] }

// Filter returns b without its superseded records and expired
// tombstones: b itself when nothing changes (changed false), nil when
// everything goes, else a rebuilt batch (also when it keeps a tombstone
// and has no delete horizon yet: it gets one). A batch that cannot be
// decoded or rebuilt is kept as it is. The batch returned is valid until
// the next call.
func (c *Filter) Filter(b record.Batch) (record.Batch, bool) {
	if c.txnData == nil {
		c.txnData = map[int64]bool{}
	}
	if b.IsControl() {
		return c.filterMarker(b)
	}
	hasHorizon := b.Attributes()&record.DeleteHorizonFlag != 0
	dropTombstones := hasHorizon && c.Now >= b.BaseTimestamp()
	if b.IsTransactional() {
		c.txnData[b.ProducerID()] = true
	}
	dropAll := c.Aborted.Aborted(b)
	c.recs, c.arena, c.header = c.recs[:0], c.arena[:0], c.header[:0]
	base, lod := b.BaseOffset(), b.LastOffsetDelta()
	pid := b.ProducerID()
	keepLast := false
	if pid != record.NoProducerID {
		if last, ok := c.ProducerLast[pid]; ok && last == b.LastOffset() {
			keepLast = true
		}
	}
	var read, removed, tombstones, keptTombstones int64
	var maxDelta int64
	err := record.IterateCompacted(b, MaxUncompressed, func(r *record.Record) error {
		read++
		off := base + int64(r.OffsetDelta)
		keep, tomb := !dropAll, false // an aborted batch goes whole (but see keepLast)
		if !dropAll && r.Key != nil && off < c.MapEnd {
			if latest, ok := c.Keys.Get(r.Key); ok && latest > off {
				keep = false
			} else if r.Value == nil && dropTombstones {
				keep, tomb = false, true
			}
		}
		if !keep && keepLast && r.OffsetDelta == lod {
			keep, tomb = true, false
		}
		if !keep {
			removed++
			if tomb {
				tombstones++
			}
			return nil
		}
		if r.Key != nil && r.Value == nil && off < c.MapEnd {
			keptTombstones++
		}
		kr := record.Record{Attributes: r.Attributes, TimestampDelta: r.TimestampDelta, OffsetDelta: r.OffsetDelta}
		if len(c.recs) == 0 || r.TimestampDelta > maxDelta {
			maxDelta = r.TimestampDelta
		}
		kr.Key = c.copyBytes(r.Key)
		kr.Value = c.copyBytes(r.Value)
		if len(r.Headers) > 0 {
			start := len(c.header)
			for _, h := range r.Headers {
				c.header = append(c.header, record.Header{Key: h.Key, Value: c.copyBytes(h.Value)})
			}
			kr.Headers = c.header[start:len(c.header):len(c.header)]
		}
		c.recs = append(c.recs, kr)
		return nil
	})
	if err != nil {
		c.Warn("cleaner keeps an undecodable batch", "offset", base, "err", err)
		return b, false
	}
	c.RecordsRead += read
	setHorizon := !hasHorizon && keptTombstones > 0 && b.LastOffset() < c.MapEnd
	if removed == 0 && !setHorizon {
		return b, false
	}
	if len(c.recs) == 0 {
		c.RecordsRemoved += removed
		c.TombstonesRemoved += tombstones
		return nil, true
	}
	maxTs := b.BaseTimestamp() + maxDelta
	if b.LogAppendTime() {
		maxTs = b.MaxTimestamp()
	}
	attrs, baseTs := b.Attributes(), b.BaseTimestamp()
	if setHorizon {
		attrs, baseTs = c.withHorizon(attrs, baseTs, c.recs)
	}
	nb, err := record.Build(record.BatchSpec{
		BaseOffset:           base,
		PartitionLeaderEpoch: b.PartitionLeaderEpoch(),
		Attributes:           attrs,
		BaseTimestamp:        baseTs,
		MaxTimestamp:         maxTs,
		ProducerID:           pid,
		ProducerEpoch:        b.ProducerEpoch(),
		BaseSequence:         b.BaseSequence(),
	}, c.recs)
	if err != nil {
		c.Warn("cleaner keeps a batch it cannot rebuild", "offset", base, "err", err)
		return b, false
	}
	c.RecordsRemoved += removed
	c.TombstonesRemoved += tombstones
	return nb, true
}

// withHorizon returns a batch's attributes and base timestamp with the
// delete horizon set: as Kafka, the base timestamp becomes the horizon and
// the records' timestamp deltas are rebased on it, so that every record
// keeps its timestamp.
func (c *Filter) withHorizon(attrs int16, baseTs int64, recs []record.Record) (int16, int64) {
	horizon := c.Now + c.DeleteRetentionMs
	if c.DeleteRetentionMs > math.MaxInt64-c.Now {
		horizon = math.MaxInt64
	}
	for i := range recs {
		recs[i].TimestampDelta = baseTs + recs[i].TimestampDelta - horizon
	}
	return attrs | record.DeleteHorizonFlag, horizon
}

// copyBytes copies p into the arena, keeping nil as nil. Earlier copies
// stay valid when the arena grows (they keep the old array).
func (c *Filter) copyBytes(p []byte) []byte {
	if p == nil {
		return nil
	}
	start := len(c.arena)
	c.arena = append(c.arena, p...)
	return c.arena[start:len(c.arena):len(c.arena)]
}

// filterMarker decides a transaction marker's fate (Kafka's
// CleanedTransactionMetadata.onControlBatchRead and delete horizon): it
// may go only once no data of its transaction is left (none was read
// since the producer's previous marker), it lies below the newest
// producer snapshot, and it cannot be the producer's last record (a
// producer whose state holds no batch keeps the markers of its current
// epoch, for the epoch a replay restores). Such a marker first gets a
// delete horizon (now + delete.retention.ms, as tombstones) and goes at a
// cleaning past it. Other control records stay.
func (c *Filter) filterMarker(b record.Batch) (record.Batch, bool) {
	pid := b.ProducerID()
	m, ok, err := record.ParseControl(b)
	if err != nil || !ok || (m.Type != record.ControlAbort && m.Type != record.ControlCommit) {
		return b, false
	}
	hadData := c.txnData[pid]
	delete(c.txnData, pid)
	if hadData || b.BaseOffset() >= c.MarkerLimit || b.LastOffset() >= c.MapEnd {
		return b, false
	}
	if epoch, ok := c.MarkerOnly[pid]; ok && epoch == b.ProducerEpoch() {
		return b, false
	}
	if b.Attributes()&record.DeleteHorizonFlag == 0 {
		return c.markerWithHorizon(b)
	}
	if c.Now < b.BaseTimestamp() {
		return b, false
	}
	c.MarkersRemoved++
	if m.Type == record.ControlAbort {
		c.removedAborts[b.BaseOffset()] = true
	}
	return nil, true
}

// markerWithHorizon rebuilds a marker batch with the delete horizon set;
// it is kept as it is if it cannot be.
func (c *Filter) markerWithHorizon(b record.Batch) (record.Batch, bool) {
	var recs []record.Record
	err := record.IterateCompacted(b, MaxUncompressed, func(r *record.Record) error {
		recs = append(recs, record.Record{Attributes: r.Attributes, TimestampDelta: r.TimestampDelta, OffsetDelta: r.OffsetDelta,
			Key: append([]byte(nil), r.Key...), Value: append([]byte(nil), r.Value...)})
		return nil
	})
	if err != nil || len(recs) == 0 {
		return b, false
	}
	attrs, baseTs := c.withHorizon(b.Attributes(), b.BaseTimestamp(), recs)
	nb, err := record.Build(record.BatchSpec{
		BaseOffset:           b.BaseOffset(),
		PartitionLeaderEpoch: b.PartitionLeaderEpoch(),
		Attributes:           attrs,
		BaseTimestamp:        baseTs,
		MaxTimestamp:         b.MaxTimestamp(),
		ProducerID:           b.ProducerID(),
		ProducerEpoch:        b.ProducerEpoch(),
		BaseSequence:         b.BaseSequence(),
	}, recs)
	if err != nil {
		c.Warn("cleaner keeps a marker it cannot rebuild", "offset", b.BaseOffset(), "err", err)
		return b, false
	}
	return nb, true
}
