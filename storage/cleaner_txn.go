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
// goes only once no data of its transaction is left (none was read since
// the producer's previous marker), its segment is past
// delete.retention.ms (as tombstones), it lies below the newest producer
// snapshot, and it cannot be the producer's last record (a producer
// whose state holds no batch keeps the markers of its current epoch, for
// the epoch a replay restores). Other control records stay.
func (c *segmentCleaner) filterMarker(b record.Batch, pastHorizon bool) (record.Batch, bool) {
	pid := b.ProducerID()
	m, ok, err := record.ParseControl(b)
	if err != nil || !ok || (m.Type != record.ControlAbort && m.Type != record.ControlCommit) {
		return b, false
	}
	hadData := c.txnData[pid]
	delete(c.txnData, pid)
	if hadData || !pastHorizon || b.BaseOffset() >= c.markerLimit {
		return b, false
	}
	if epoch, ok := c.markerOnly[pid]; ok && epoch == b.ProducerEpoch() {
		return b, false
	}
	c.st.MarkersRemoved++
	if m.Type == record.ControlAbort {
		c.removedAborts[b.BaseOffset()] = true
	}
	return nil, true
}

// writeTxnIndex writes the cleaned segment's .txnindex.cleaned, swapped
// in with the other files.
func (w *cleanedWriter) writeTxnIndex(entries []abortedTxn) error {
	f, err := w.l.fs.OpenFile(cleanedName(w.l.dir, w.s.base, txnIndexSuffix), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
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
