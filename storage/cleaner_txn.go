package storage

import (
	"fmt"
	"os"

	"github.com/kbroker/kbroker/storage/cleaner"
	"github.com/kbroker/kbroker/storage/logfs"
)

// writeTxnIndex writes the cleaned segment's .txnindex.cleaned, swapped
// in with the other files.
func (w *cleanedWriter) writeTxnIndex(entries []abortedTxn) error {
	f, err := w.l.fs.OpenFile(cleanedName(w.l.Dir(), w.s.base, logfs.TxnIndexSuffix), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
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

// abortedRangesLocked collects the .txnindex entries of transactions that
// began below end, for the cleaner's Filter.
func (l *Log) abortedRangesLocked(end int64) cleaner.AbortedRanges {
	r := cleaner.AbortedRanges{}
	for _, s := range l.mu.segments {
		for _, a := range s.aborted {
			if a.firstOffset < end {
				r.Add(a.producerID, cleaner.AbortedTxn{FirstOffset: a.firstOffset, LastOffset: a.lastOffset})
			}
		}
	}
	r.Sort()
	return r
}
