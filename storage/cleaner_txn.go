package storage

import (
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
