package storage

import (
	"fmt"
	"os"
	"sort"

	"github.com/kbroker/kbroker/wire/record"
)

// abortedRanges answers, for the cleaner, whether a transactional batch
// belongs to an aborted transaction: its producer's aborted transactions
// (from the .txnindex entries) as [firstOffset, marker) ranges, which do
// not overlap as a producer has one transaction at a time. Kafka's
// cleaner tracks the same with the aborted transactions of the cleaned
// range and the control batches it reads.
type abortedRanges map[int64][]abortedTxn

// abortedRangesLocked collects the .txnindex entries of transactions that
// began below end.
func (l *Log) abortedRangesLocked(end int64) abortedRanges {
	r := abortedRanges{}
	for _, s := range l.mu.segments {
		for _, a := range s.aborted {
			if a.firstOffset < end {
				r[a.producerID] = append(r[a.producerID], a)
			}
		}
	}
	for _, list := range r {
		sort.Slice(list, func(i, j int) bool { return list[i].firstOffset < list[j].firstOffset })
	}
	return r
}

// aborted reports whether b is data of an aborted transaction.
func (r abortedRanges) aborted(b record.Batch) bool {
	if !b.IsTransactional() || b.IsControl() || len(r) == 0 {
		return false
	}
	list := r[b.ProducerID()]
	i := sort.Search(len(list), func(i int) bool { return list[i].firstOffset > b.BaseOffset() }) - 1
	return i >= 0 && b.LastOffset() < list[i].lastOffset
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
func (c *segmentCleaner) filterMarker(b record.Batch) (record.Batch, bool) {
	pid := b.ProducerID()
	m, ok, err := record.ParseControl(b)
	if err != nil || !ok || (m.Type != record.ControlAbort && m.Type != record.ControlCommit) {
		return b, false
	}
	hadData := c.txnData[pid]
	delete(c.txnData, pid)
	if hadData || b.BaseOffset() >= c.markerLimit || b.LastOffset() >= c.mapEnd {
		return b, false
	}
	if epoch, ok := c.markerOnly[pid]; ok && epoch == b.ProducerEpoch() {
		return b, false
	}
	if b.Attributes()&record.DeleteHorizonFlag == 0 {
		return c.markerWithHorizon(b)
	}
	if c.now < b.BaseTimestamp() {
		return b, false
	}
	c.st.MarkersRemoved++
	if m.Type == record.ControlAbort {
		c.removedAborts[b.BaseOffset()] = true
	}
	return nil, true
}

// markerWithHorizon rebuilds a marker batch with the delete horizon set;
// it is kept as it is if it cannot be.
func (c *segmentCleaner) markerWithHorizon(b record.Batch) (record.Batch, bool) {
	var recs []record.Record
	err := record.IterateCompacted(b, maxUncompressedForCleaning, func(r *record.Record) error {
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
		c.l.logger.Warn("cleaner keeps a marker it cannot rebuild", "dir", c.l.Dir(), "offset", b.BaseOffset(), "err", err)
		return b, false
	}
	return nb, true
}

// writeTxnIndex writes the cleaned segment's .txnindex.cleaned, swapped
// in with the other files.
func (w *cleanedWriter) writeTxnIndex(entries []abortedTxn) error {
	f, err := w.l.fs.OpenFile(cleanedName(w.l.Dir(), w.s.base, txnIndexSuffix), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrStorage, err)
	}
	w.s.txn, w.hasTxn = f, true
	buf := make([]byte, 0, len(entries)*txnIndexEntrySize)
	for _, a := range entries {
		buf = a.encode(buf)
	}
	if len(buf) > 0 {
		if _, err := f.WriteAt(buf, 0); err != nil {
			return fmt.Errorf("%w: %v", ErrStorage, err)
		}
	}
	w.s.aborted = entries
	return nil
}
