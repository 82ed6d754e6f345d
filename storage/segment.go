package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"time"

	"github.com/kbroker/kbroker/storage/logfs"
	"github.com/kbroker/kbroker/wire/record"
)

const (
	indexEntrySize = 8
	// timeIndexEntrySize is a .timeindex entry: timestamp i64, relative
	// offset i32.
	timeIndexEntrySize = 12
)

// segment is one .log file and its sparse .index. All fields are guarded
// by the owning Log's mu.
type segment struct {
	base int64
	log  File
	idx  File
	tidx File // .timeindex
	// txn is the .txnindex, nil until the segment has an aborted
	// transaction; aborted holds its entries, by marker offset.
	txn      File
	aborted  []abortedTxn
	txnDirty bool // the file may be longer than aborted: cut it before appending

	size       int64 // bytes in the .log
	entries    int   // entries in the .index
	tentries   int   // entries in the .timeindex
	nextOffset int64 // last offset of the last batch + 1, or base when empty

	bytesSinceIndex int
	firstTimestamp  int64 // maxTimestamp of the first batch, -1 when empty
	// maxTimestamp is the largest batch maxTimestamp in the segment (-1
	// when empty) and offsetOfMaxTimestamp the last offset of the first
	// batch that has it (Kafka's "shallow" offset of the max timestamp).
	maxTimestamp         int64
	offsetOfMaxTimestamp int64
	lastTimeIndexed      int64     // timestamp of the last .timeindex entry, -1 if none
	created              time.Time // when this process created or opened it
	// rollJitterMs is this segment's draw of segment.jitter.ms (roll.go),
	// made the first time its age is checked.
	rollJitterMs int64
	jitterDrawn  bool
	// preallocated says the .log was given segment.bytes at creation
	// (prealloc.go): the file is longer than size until trimmed.
	preallocated bool
	// recent is where the last appended batches start (recent.go); nil
	// until the first append, and again once rewritten or rolled.
	recent *recentBatches
}

// openSegment opens (creating if asked) the files of the segment at base.
// It reads sizes but does not validate contents.
func openSegment(fsys FS, dir string, base int64, create bool, now time.Time) (*segment, error) {
	flag := os.O_RDWR
	if create {
		flag |= os.O_CREATE
	}
	lf, err := fsys.OpenFile(logfs.FileName(dir, base, logfs.LogSuffix), flag, FilePerm)
	if err != nil {
		return nil, err
	}
	indexMissing := false
	xf, err := fsys.OpenFile(logfs.FileName(dir, base, logfs.IndexSuffix), os.O_RDWR, FilePerm)
	if errors.Is(err, os.ErrNotExist) {
		indexMissing = true
		xf, err = fsys.OpenFile(logfs.FileName(dir, base, logfs.IndexSuffix), os.O_RDWR|os.O_CREATE, FilePerm)
	}
	if err != nil {
		lf.Close()
		return nil, err
	}
	timeMissing := false
	tf, err := fsys.OpenFile(logfs.FileName(dir, base, logfs.TimeIndexSuffix), os.O_RDWR, FilePerm)
	if errors.Is(err, os.ErrNotExist) {
		timeMissing = true
		tf, err = fsys.OpenFile(logfs.FileName(dir, base, logfs.TimeIndexSuffix), os.O_RDWR|os.O_CREATE, FilePerm)
	}
	if err != nil {
		lf.Close()
		xf.Close()
		return nil, err
	}
	s := &segment{base: base, log: lf, idx: xf, tidx: tf, nextOffset: base, firstTimestamp: -1, created: now,
		maxTimestamp: -1, offsetOfMaxTimestamp: base, lastTimeIndexed: -1}
	if s.size, err = fileSize(lf); err != nil {
		s.close()
		return nil, err
	}
	xsize, err := fileSize(xf)
	if err != nil {
		s.close()
		return nil, err
	}
	s.entries = int(xsize / indexEntrySize)
	if xsize%indexEntrySize != 0 || (indexMissing && s.size > 0) {
		s.entries = -1 // marks the index as inconsistent: rebuild it
	}
	tsize, err := fileSize(tf)
	if err != nil {
		s.close()
		return nil, err
	}
	s.tentries = int(tsize / timeIndexEntrySize)
	if tsize%timeIndexEntrySize != 0 || (timeMissing && s.size > 0) {
		s.tentries = -1
	}
	if err := s.loadTxnIndex(fsys, dir); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

func fileSize(f File) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

func (s *segment) close() error {
	err1 := s.log.Close()
	err2 := s.idx.Close()
	err3 := s.tidx.Close()
	var err4 error
	if s.txn != nil {
		err4 = s.txn.Close()
		s.txn = nil
	}
	return errors.Join(err1, err2, err3, err4)
}

func (s *segment) sync() error {
	var err error
	if s.txn != nil {
		err = s.txn.Sync()
	}
	return errors.Join(s.log.Sync(), s.idx.Sync(), s.tidx.Sync(), err)
}

// written reports whether anything may have been written to the
// segment's files since they were opened: true unless every file can
// tell it was not (the Manager's files can, package logfs).
func (s *segment) written() bool {
	for _, f := range []File{s.log, s.idx, s.tidx, s.txn} {
		if f == nil {
			continue
		}
		if w, ok := f.(logfs.WriteTracker); !ok || w.WrittenSinceOpen() {
			return true
		}
	}
	return false
}

// remove closes and deletes the segment's files.
func (s *segment) remove(fsys FS, dir string) error {
	s.close()
	err1 := fsys.Remove(logfs.FileName(dir, s.base, logfs.LogSuffix))
	var errs []error
	for _, suffix := range []string{logfs.IndexSuffix, logfs.TimeIndexSuffix, logfs.TxnIndexSuffix} {
		if err := fsys.Remove(logfs.FileName(dir, s.base, suffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(append(errs, err1)...)
}

// indexFull reports whether the index has room for no more entries.
func (s *segment) indexFull(maxIndexBytes int) bool {
	return (s.entries+1)*indexEntrySize > maxIndexBytes
}

// timeIndexCapacity is how many .timeindex entries a segment may hold:
// segment.index.bytes of them, at least 2. One is kept for the entry
// written when the segment is rolled, so that the last entry of an
// inactive segment always holds its max timestamp.
func timeIndexCapacity(maxIndexBytes int) int {
	return max(maxIndexBytes/timeIndexEntrySize, 2)
}

// timeIndexFull reports whether only the slot kept for the roll is left.
func (s *segment) timeIndexFull(maxIndexBytes int) bool {
	return s.tentries+1 >= timeIndexCapacity(maxIndexBytes)
}

func encodeTimeIndexEntry(dst []byte, base, ts, offset int64) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(ts))
	return binary.BigEndian.AppendUint32(dst, uint32(int32(offset-base)))
}

// timeEntry reads .timeindex entry i: a timestamp and an absolute offset.
func (s *segment) timeEntry(i int) (int64, int64, error) {
	var buf [timeIndexEntrySize]byte
	if _, err := s.tidx.ReadAt(buf[:], int64(i)*timeIndexEntrySize); err != nil {
		return 0, 0, err
	}
	ts := int64(binary.BigEndian.Uint64(buf[0:]))
	rel := int32(binary.BigEndian.Uint32(buf[8:]))
	return ts, s.base + int64(rel), nil
}

// timeLookup returns the offset of the last .timeindex entry whose
// timestamp is <= ts, or the base offset: scanning from the batch holding
// it finds the first record with a timestamp >= ts.
func (s *segment) timeLookup(ts int64) (int64, error) {
	var ioErr error
	i := sort.Search(s.tentries, func(i int) bool {
		if ioErr != nil {
			return true
		}
		t, _, err := s.timeEntry(i)
		if err != nil {
			ioErr = err
			return true
		}
		return t > ts
	})
	if ioErr != nil {
		return 0, ioErr
	}
	if i == 0 {
		return s.base, nil
	}
	_, off, err := s.timeEntry(i - 1)
	return off, err
}

// appendTimeIndexLocked appends (maxTimestamp, offsetOfMaxTimestamp) when
// the max timestamp grew past the last entry and there is room (force:
// use the slot kept for the roll).
func (s *segment) appendTimeIndex(maxIndexBytes int, force bool) error {
	if s.maxTimestamp <= s.lastTimeIndexed || s.tentries < 0 {
		return nil
	}
	if s.tentries >= timeIndexCapacity(maxIndexBytes) || (!force && s.timeIndexFull(maxIndexBytes)) {
		return nil
	}
	entry := encodeTimeIndexEntry(nil, s.base, s.maxTimestamp, s.offsetOfMaxTimestamp)
	if _, err := s.tidx.WriteAt(entry, int64(s.tentries)*timeIndexEntrySize); err != nil {
		return err
	}
	s.tentries++
	s.lastTimeIndexed = s.maxTimestamp
	return nil
}

// timeState is what an append changes in a segment's time tracking, to
// undo a failed append.
type timeState struct {
	tentries                                            int
	maxTimestamp, offsetOfMaxTimestamp, lastTimeIndexed int64
}

func (s *segment) timeState() timeState {
	return timeState{s.tentries, s.maxTimestamp, s.offsetOfMaxTimestamp, s.lastTimeIndexed}
}

func (s *segment) restoreTimeState(t timeState) {
	s.tentries, s.maxTimestamp, s.offsetOfMaxTimestamp, s.lastTimeIndexed =
		t.tentries, t.maxTimestamp, t.offsetOfMaxTimestamp, t.lastTimeIndexed
}

// observe records b's max timestamp in the segment's running maximum.
func (s *segment) observe(b record.Batch) {
	if b.MaxTimestamp() > s.maxTimestamp {
		s.maxTimestamp, s.offsetOfMaxTimestamp = b.MaxTimestamp(), b.LastOffset()
	}
}

// entry reads index entry i: the absolute last offset of an indexed batch
// and the file position where that batch starts.
func (s *segment) entry(i int) (int64, int64, error) {
	var buf [indexEntrySize]byte
	if _, err := s.idx.ReadAt(buf[:], int64(i)*indexEntrySize); err != nil {
		return 0, 0, err
	}
	rel := int32(binary.BigEndian.Uint32(buf[0:]))
	pos := int32(binary.BigEndian.Uint32(buf[4:]))
	return s.base + int64(rel), int64(pos), nil
}

// lookup returns the position of the last indexed batch whose last offset
// is <= offset, or 0. Scanning forward from it finds the batch holding
// offset.
func (s *segment) lookup(offset int64) (int64, error) {
	var ioErr error
	i := sort.Search(s.entries, func(i int) bool {
		if ioErr != nil {
			return true
		}
		off, _, err := s.entry(i)
		if err != nil {
			ioErr = err
			return true
		}
		return off > offset
	})
	if ioErr != nil {
		return 0, ioErr
	}
	if i == 0 {
		return 0, nil
	}
	_, pos, err := s.entry(i - 1)
	return pos, err
}

func encodeIndexEntry(dst []byte, base, lastOffset, pos int64) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(int32(lastOffset-base)))
	return binary.BigEndian.AppendUint32(dst, uint32(int32(pos)))
}

// fitsIndex reports whether a batch ending at lastOffset and starting at
// pos can be described by an index entry of this segment (int32 relative
// offset and position).
func (s *segment) fitsIndex(lastOffset, pos int64) bool {
	return lastOffset-s.base <= math.MaxInt32 && pos <= math.MaxInt32
}

// readHeader reads the batch header at pos. It returns the header and the
// batch's total size, checking that the whole batch lies within the
// segment.
func (s *segment) readHeader(pos int64) (record.Batch, int64, error) {
	if s.size-pos < record.HeaderSize {
		return nil, 0, fmt.Errorf("%w: header at %d past segment end %d", ErrCorrupt, pos, s.size)
	}
	hdr := make([]byte, record.HeaderSize)
	if _, err := s.log.ReadAt(hdr, pos); err != nil {
		return nil, 0, fmt.Errorf("%w: %v", ErrStorage, err)
	}
	size, err := record.PeekSize(hdr)
	if err != nil || int64(size) > s.size-pos || size < record.HeaderSize {
		return nil, 0, &CorruptBatchError{Position: pos, Offset: -1, Reason: "bad batch size"}
	}
	return record.Batch(hdr), int64(size), nil
}
