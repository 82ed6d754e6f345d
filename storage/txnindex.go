package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/kbroker/kbroker/storage/logfs"
)

const (
	// txnIndexEntrySize is Kafka's AbortedTxn: version i16, producerId
	// i64, firstOffset i64, lastOffset i64, lastStableOffset i64.
	txnIndexEntrySize = 34
	txnIndexVersion   = 0
)

// abortedTxn is one .txnindex entry: an aborted transaction of a producer
// from its first offset to its ABORT marker (lastOffset), and the last
// stable offset when the marker was written (Kafka's AbortedTxn).
type abortedTxn struct {
	producerID       int64
	firstOffset      int64
	lastOffset       int64
	lastStableOffset int64
}

func (a abortedTxn) encode(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint16(dst, txnIndexVersion)
	dst = binary.BigEndian.AppendUint64(dst, uint64(a.producerID))
	dst = binary.BigEndian.AppendUint64(dst, uint64(a.firstOffset))
	dst = binary.BigEndian.AppendUint64(dst, uint64(a.lastOffset))
	return binary.BigEndian.AppendUint64(dst, uint64(a.lastStableOffset))
}

// loadTxnIndex reads s's .txnindex if there is one. Entries are kept in
// memory (aborted transactions are few) and in the file for the next open.
// A torn last entry or one of an unknown version ends the index there: the
// entries after it are rebuilt by the producer state replay at load.
func (s *segment) loadTxnIndex(fsys FS, dir string) error {
	f, err := fsys.OpenFile(logfs.FileName(dir, s.base, logfs.TxnIndexSuffix), os.O_RDWR, 0o644)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	size, err := fileSize(f)
	if err != nil {
		f.Close()
		return err
	}
	s.txn = f
	var buf [txnIndexEntrySize]byte
	for pos := int64(0); pos+txnIndexEntrySize <= size; pos += txnIndexEntrySize {
		if _, err := f.ReadAt(buf[:], pos); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if binary.BigEndian.Uint16(buf[:]) != txnIndexVersion {
			break
		}
		s.aborted = append(s.aborted, abortedTxn{
			producerID:       int64(binary.BigEndian.Uint64(buf[2:])),
			firstOffset:      int64(binary.BigEndian.Uint64(buf[10:])),
			lastOffset:       int64(binary.BigEndian.Uint64(buf[18:])),
			lastStableOffset: int64(binary.BigEndian.Uint64(buf[26:])),
		})
	}
	// The file may hold more than the entries kept (a torn write); the
	// next append or truncation cuts it to them.
	s.txnDirty = size != int64(len(s.aborted))*txnIndexEntrySize
	return nil
}

// appendAborted adds an entry to the .txnindex, creating the file on the
// first one (as Kafka does, segments without aborts have none).
func (s *segment) appendAborted(fsys FS, dir string, a abortedTxn) error {
	if s.txn == nil {
		f, err := fsys.OpenFile(logfs.FileName(dir, s.base, logfs.TxnIndexSuffix), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		s.txn, s.txnDirty = f, true
	}
	n := int64(len(s.aborted)) * txnIndexEntrySize
	if s.txnDirty {
		if err := s.txn.Truncate(n); err != nil {
			return err
		}
		s.txnDirty = false
	}
	if _, err := s.txn.WriteAt(a.encode(nil), n); err != nil {
		// Cut back whatever part of the entry made it.
		if terr := s.txn.Truncate(n); terr != nil {
			s.txnDirty = true
		}
		return err
	}
	s.aborted = append(s.aborted, a)
	return nil
}

// truncateAborted drops the entries whose ABORT marker is at or after
// offset (Kafka's TransactionIndex.truncateTo).
func (s *segment) truncateAborted(offset int64) error {
	i := sort.Search(len(s.aborted), func(i int) bool { return s.aborted[i].lastOffset >= offset })
	if i == len(s.aborted) && !s.txnDirty {
		return nil
	}
	s.aborted = s.aborted[:i]
	if s.txn == nil {
		return nil
	}
	if err := s.txn.Truncate(int64(i) * txnIndexEntrySize); err != nil {
		s.txnDirty = true
		return fmt.Errorf("truncate %s: %w", logfs.TxnIndexSuffix, err)
	}
	s.txnDirty = false
	return nil
}

// hasAborted reports whether the index holds producerID's abort at marker
// offset lastOffset.
func (s *segment) hasAborted(producerID, lastOffset int64) bool {
	i := sort.Search(len(s.aborted), func(i int) bool { return s.aborted[i].lastOffset >= lastOffset })
	return i < len(s.aborted) && s.aborted[i].lastOffset == lastOffset && s.aborted[i].producerID == producerID
}

// collectAborted appends the entries overlapping [fetchOffset,
// upperBound) and reports whether the search is complete: an entry whose
// last stable offset reached upperBound proves no later segment holds an
// overlapping one (Kafka's TransactionIndex.collectAbortedTxns).
func (s *segment) collectAborted(dst []AbortedTxn, fetchOffset, upperBound int64) ([]AbortedTxn, bool) {
	for _, a := range s.aborted {
		if a.lastOffset >= fetchOffset && a.firstOffset < upperBound {
			dst = append(dst, AbortedTxn{ProducerID: a.producerID, FirstOffset: a.firstOffset, LastOffset: a.lastOffset})
		}
		if a.lastStableOffset >= upperBound {
			return dst, true
		}
	}
	return dst, false
}
