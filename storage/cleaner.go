package storage

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/kbroker/kbroker/storage/cleaner"
	"github.com/kbroker/kbroker/storage/integrity"
	"github.com/kbroker/kbroker/storage/logfs"
	"github.com/kbroker/kbroker/wire/record"
)

const (
	// cleanerCheckpointFile is the per-directory checkpoint of each
	// compacted log's first dirty offset (Kafka's
	// cleaner-offset-checkpoint), in the text format of recoveryPointFile.
	cleanerCheckpointFile = "cleaner-offset-checkpoint"
	// DefaultCleanerBackoff is how often Manager.Run looks for logs to
	// clean (Kafka's log.cleaner.backoff.ms).
	DefaultCleanerBackoff = 15 * time.Second
	// cleanerWriteBuffer is how many bytes of a cleaned segment are
	// buffered between writes.
	cleanerWriteBuffer = 1 << 20
)

// CleanStats describes one Clean.
type CleanStats struct {
	FirstDirtyOffset  int64 // where the key map's scan started (the checkpoint)
	CleanableEnd      int64 // offsets at and past it were not touched; the next FirstDirtyOffset
	Keys              int   // distinct keys in the map
	SegmentsScanned   int   // inactive segments below CleanableEnd
	SegmentsRewritten int   // segments swapped for a cleaned copy
	BytesRead         int64 // bytes of the scanned segments
	BytesWritten      int64 // bytes of the cleaned copies
	RecordsRead       int64 // records decoded in the scanned segments
	RecordsRemoved    int64 // superseded records and tombstones dropped
	TombstonesRemoved int64 // of RecordsRemoved, expired tombstones (the key's latest record)
	BatchesRemoved    int64 // batches left empty, dropped
	MarkersRemoved    int64 // transaction markers whose transaction's data was gone, dropped after delete.retention.ms
	Aborted           bool  // the log changed under the cleaner (truncated, closed, retention): stopped early
	KeyMapBytes       int64 // memory of the key map (at most log.cleaner.dedupe.buffer.size)
	KeyMapFull        bool  // the dirty section had more keys than the map holds: this pass stopped at CleanableEnd
	Duration          time.Duration
}

// cleanerState is the Log's cleaner bookkeeping, guarded by Log.cleanMu.
type cleanerState struct {
	loaded     bool
	firstDirty int64  // the checkpointed cleaner offset, -1 if none
	generation uint64 // the log's truncation generation firstDirty is from
	limits     CleanerLimits
}

// cleanerCheckpointMu serializes read-modify-write of the cleaner
// checkpoint files (logs of one directory may be cleaned concurrently).
var cleanerCheckpointMu sync.Mutex

// cleanSeg is an inactive segment as seen when cleaning started.
type cleanSeg struct {
	s            *segment
	base, size   int64
	end          int64 // the next segment's base offset
	maxTimestamp int64
	hasTxnIndex  bool         // the segment has a .txnindex file
	aborted      []abortedTxn // its entries
}

// cleanPlan is what Clean and DirtyRatio need from the log, taken under a
// read lock.
type cleanPlan struct {
	segs                []cleanSeg // the inactive segments below cleanableEnd
	inactiveBytes       int64      // bytes of all inactive segments
	cleanableEnd        int64
	logStart, logEnd    int64
	generation          uint64
	producerLastOffsets map[int64]int64
	// markerOnlyEpochs maps producers whose state has no batches (their
	// last record may be a marker) to their epoch.
	markerOnlyEpochs map[int64]int16
	aborted          cleaner.AbortedRanges
	// markerLimit is the newest producer snapshot's offset: markers at or
	// past it are kept, as a replay from that snapshot needs them.
	markerLimit int64
}

func (l *Log) planLocked(now time.Time) cleanPlan {
	segs := l.mu.segments
	p := cleanPlan{
		cleanableEnd: segs[len(segs)-1].base,
		logStart:     l.mu.logStartOffset,
		logEnd:       l.mu.logEndOffset,
		generation:   l.mu.generation,
	}
	lagLimit := now.UnixMilli() - l.config().MinCompactionLagMs
	// Records of transactions still undecided (or whose marker may not be
	// replicated) are not cleaned: whether they are aborted is not known.
	firstUnstable, unstable := l.firstUnstableLocked(l.published.highWatermark.Load())
	stopped := false
	for i, s := range segs[:len(segs)-1] {
		p.inactiveBytes += s.size
		if stopped {
			continue
		}
		// min.compaction.lag.ms: a segment with a record newer than the
		// lag, and everything after it, stays uncleaned.
		if l.config().MinCompactionLagMs > 0 && s.maxTimestamp > lagLimit {
			p.cleanableEnd, stopped = s.base, true
			continue
		}
		if unstable && segs[i+1].base > firstUnstable {
			p.cleanableEnd, stopped = s.base, true
			continue
		}
		p.segs = append(p.segs, cleanSeg{s: s, base: s.base, size: s.size, end: segs[i+1].base, maxTimestamp: s.maxTimestamp,
			hasTxnIndex: s.txn != nil, aborted: append([]abortedTxn(nil), s.aborted...)})
	}
	return p
}

// firstDirtyLocked returns the cleaner offset, loaded from the checkpoint
// the first time, clamped to the log: an offset outside [log start, log
// end] (a truncated or recreated log) restarts at the log start. The
// caller holds cleanMu. A truncation since the offset was set may have
// replaced records below it, so it restarts at the log start too.
func (l *Log) firstDirtyLocked(logStart, logEnd int64, generation uint64) int64 {
	if l.cleaner.loaded && l.cleaner.generation != generation {
		l.cleaner.firstDirty = -1
	}
	l.cleaner.generation = generation
	if !l.cleaner.loaded {
		l.cleaner.loaded, l.cleaner.firstDirty = true, -1
		if tp, ok := parseDirName(filepath.Base(l.Dir())); ok {
			cleanerCheckpointMu.Lock()
			offs, err := readCleanerCheckpoint(l.fs, filepath.Dir(l.Dir()))
			cleanerCheckpointMu.Unlock()
			if err != nil {
				l.logger.Warn("ignoring bad cleaner checkpoint", "dir", filepath.Dir(l.Dir()), "err", err)
			} else if off, ok := offs[tp]; ok {
				l.cleaner.firstDirty = off
			}
		}
	}
	if off := l.cleaner.firstDirty; off >= logStart && off <= logEnd {
		return off
	}
	return logStart
}

func readCleanerCheckpoint(fsys FS, dir string) (map[topicPartition]int64, error) {
	data, err := logfs.ReadFile(fsys, filepath.Join(dir, cleanerCheckpointFile))
	if errors.Is(err, os.ErrNotExist) {
		return map[topicPartition]int64{}, nil
	}
	if err != nil {
		return nil, err
	}
	offs, err := decodeCheckpoint(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, cleanerCheckpointFile), err)
	}
	return offs, nil
}

// updateCleanerCheckpoint sets (off >= 0) or removes (off < 0) tp's entry
// in dir's cleaner checkpoint.
func updateCleanerCheckpoint(fsys FS, dir string, tp topicPartition, off int64) error {
	cleanerCheckpointMu.Lock()
	defer cleanerCheckpointMu.Unlock()
	offs, err := readCleanerCheckpoint(fsys, dir)
	if err != nil {
		offs = map[topicPartition]int64{} // a bad file only costs a full rescan
	}
	if old, ok := offs[tp]; (ok && old == off) || (!ok && off < 0) {
		return nil
	}
	if off < 0 {
		delete(offs, tp)
	} else {
		offs[tp] = off
	}
	return logfs.WriteFileAtomic(fsys, dir, filepath.Join(dir, cleanerCheckpointFile), encodeCheckpoint(offs))
}

// DirtyRatio returns the log's dirty bytes (inactive segments cleanable
// now and not below the cleaner checkpoint) over the bytes of all its
// inactive segments, as Kafka's cleaner ranks logs; 0 for a log without
// inactive segments.
func (l *Log) DirtyRatio(now time.Time) (float64, error) {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	l.mu.RLock()
	if err := l.writableLocked(); err != nil {
		l.mu.RUnlock()
		return 0, fmt.Errorf("dirty ratio %s: %w", l.Dir(), err)
	}
	p := l.planLocked(now)
	l.mu.RUnlock()
	if p.inactiveBytes == 0 {
		return 0, nil
	}
	firstDirty := l.firstDirtyLocked(p.logStart, p.logEnd, p.generation)
	var dirty int64
	for _, cs := range p.segs {
		if cs.end > firstDirty {
			dirty += cs.size
		}
	}
	return float64(dirty) / float64(p.inactiveBytes), nil
}

// Clean compacts the log's inactive segments below its cleanable end (the
// active segment's base offset, or the first segment holding a record
// newer than min.compaction.lag.ms): it maps each key to its latest
// offset in the dirty section (from the cleaner checkpoint to the
// cleanable end), then rewrites each such segment keeping, per key, only
// the record at that offset. Records with a null key are kept. Tombstones
// (null values) are dropped once their segment's largest timestamp is
// more than delete.retention.ms before now. Records keep their offsets:
// a batch losing records is rebuilt with the same base offset, producer
// id, epoch, base sequence, attributes (codec included) and partition
// leader epoch, and gaps in its offset deltas; a batch losing all its
// records is dropped, except that the last record of an idempotent
// producer's latest batch is always kept, so that the batch's last offset
// and sequence survive for the producer state rebuilt from the log (Kafka
// keeps an empty batch instead). The log start and end offsets do not
// change; segments may end up empty, never deleted here. Transactions:
// nothing from the first unstable offset on is cleaned, batches of
// aborted transactions go, and markers go once their transaction's data
// is gone (see doc.go, Transactions).
//
// Reads and appends go on while Clean reads and writes: it takes the log's
// lock only to plan and to swap each cleaned segment in. Each cleaned
// segment is written to <base>.log.cleaned (and .index.cleaned,
// .timeindex.cleaned), fsynced, renamed to .swap and then over the
// originals; open finishes or discards an interrupted swap. A truncation
// or retention meanwhile stops Clean (Aborted) without error.
//
// Clean does not check cleanup.policy: Manager.Run calls it for compacted
// logs only.
func (l *Log) Clean(now time.Time) (CleanStats, error) {
	started := time.Now()
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	var st CleanStats
	l.mu.RLock()
	if err := l.writableLocked(); err != nil {
		l.mu.RUnlock()
		return st, fmt.Errorf("clean %s: %w", l.Dir(), err)
	}
	p := l.planLocked(now)
	p.producerLastOffsets = make(map[int64]int64, len(l.mu.producers))
	p.markerOnlyEpochs = make(map[int64]int16)
	for pid, e := range l.mu.producers {
		if len(e.Batches) > 0 {
			p.producerLastOffsets[pid] = e.Last().LastOffset
		} else {
			p.markerOnlyEpochs[pid] = e.Epoch
		}
	}
	p.aborted = l.abortedRangesLocked(p.cleanableEnd)
	p.markerLimit = l.mu.snapshotOffset
	l.mu.RUnlock()

	firstDirty := l.firstDirtyLocked(p.logStart, p.logEnd, p.generation)
	st.FirstDirtyOffset, st.CleanableEnd = firstDirty, p.cleanableEnd
	if firstDirty >= p.cleanableEnd {
		st.CleanableEnd = firstDirty
		st.Duration = time.Since(started)
		return st, nil
	}
	// One pass: map the dirty section's keys until the map (bounded by
	// log.cleaner.dedupe.buffer.size) is full, then clean up to there.
	lim := l.cleaner.limits
	th := cleaner.NewThrottler(lim.shared, lim.IOMaxBytesPerSecond, lim.Stop, lim.sleep)
	keys := cleaner.NewKeyMap(cmp.Or(l.cleaner.limits.DedupeBufferSize, DefaultDedupeBufferSize), dirtyBytes(p.segs, firstDirty))
	mapEnd, full, err := l.mapKeys(keys, p.segs, firstDirty, p.cleanableEnd, p.aborted, th)
	if err != nil {
		return st, fmt.Errorf("clean %s: %w", l.Dir(), err)
	}
	p.cleanableEnd, p.segs = mapEnd, segmentsBelow(p.segs, mapEnd)
	st.CleanableEnd, st.KeyMapBytes, st.KeyMapFull = mapEnd, keys.Bytes(), full
	st.Keys = keys.Len()
	f := &cleaner.Filter{Keys: keys, MapEnd: mapEnd, ProducerLast: p.producerLastOffsets, Aborted: p.aborted,
		MarkerOnly: p.markerOnlyEpochs, MarkerLimit: p.markerLimit,
		Now: now.UnixMilli(), DeleteRetentionMs: l.config().DeleteRetentionMs, Warn: l.warnCleaner}
	c := &segmentCleaner{l: l, filter: f, throttle: th, st: &st}
	for _, cs := range p.segs {
		st.SegmentsScanned++
		st.BytesRead += cs.size
		swapped, err := c.clean(cs, p.generation)
		st.RecordsRead, st.RecordsRemoved = f.RecordsRead, f.RecordsRemoved
		st.TombstonesRemoved, st.MarkersRemoved = f.TombstonesRemoved, f.MarkersRemoved
		if err != nil {
			return st, fmt.Errorf("clean %s segment %d: %w", l.Dir(), cs.base, err)
		}
		if !swapped {
			st.Aborted = true
			st.Duration = time.Since(started)
			l.logger.Info("cleaning stopped: the log changed", "dir", l.Dir(), "segment", cs.base)
			return st, nil
		}
	}
	l.cleaner.firstDirty = p.cleanableEnd
	if tp, ok := parseDirName(filepath.Base(l.Dir())); ok {
		if err := updateCleanerCheckpoint(l.fs, filepath.Dir(l.Dir()), tp, p.cleanableEnd); err != nil {
			// The cleaning stands; the next run rescans more than needed.
			l.logger.Warn("cleaner checkpoint failed", "dir", l.Dir(), "err", err)
		}
	}
	st.Duration = time.Since(started)
	l.logger.Info("cleaned log", "dir", l.Dir(), "first_dirty", firstDirty, "cleanable_end", p.cleanableEnd,
		"keys", st.Keys, "segments_rewritten", st.SegmentsRewritten, "bytes_read", st.BytesRead,
		"bytes_written", st.BytesWritten, "records_removed", st.RecordsRemoved, "duration", st.Duration)
	return st, nil
}

// warnCleaner is a Filter's Warn: the log's directory, then args.
func (l *Log) warnCleaner(msg string, args ...any) {
	l.logger.Warn(msg, append([]any{"dir", l.Dir()}, args...)...)
}

// segmentCleaner rewrites segments with a Filter.
type segmentCleaner struct {
	l        *Log
	filter   *cleaner.Filter
	throttle *cleaner.Throttler
	st       *CleanStats
}

// clean rewrites cs if cleaning removes anything and swaps it in.
// swapped is false when the log changed so that the result may not be
// swapped in (the caller stops); a segment with nothing to remove counts
// as swapped.
func (c *segmentCleaner) clean(cs cleanSeg, generation uint64) (swapped bool, err error) {
	l := c.l
	c.filter.StartSegment()
	var w *cleanedWriter
	defer func() {
		if w != nil {
			w.discard()
		}
	}()
	sc := integrity.NewScanner(cs.s.log, 0, cs.size)
	for {
		b, pos, ok := sc.Next()
		if !ok {
			break
		}
		out, changed := c.filter.Filter(b)
		c.throttle.Add(len(b) + len(out))
		if !changed && w == nil {
			continue
		}
		if w == nil {
			// The first change: copy the unchanged batches before it.
			if w, err = newCleanedWriter(l, cs.base); err != nil {
				return false, err
			}
			pre := integrity.NewScanner(cs.s.log, 0, pos)
			for {
				pb, _, ok := pre.Next()
				if !ok {
					break
				}
				if err := w.add(pb); err != nil {
					return false, err
				}
			}
			if pre.Err() != nil {
				return false, pre.Err()
			}
		}
		if out == nil {
			c.st.BatchesRemoved++
			continue
		}
		if err := w.add(out); err != nil {
			return false, err
		}
	}
	if sc.Err() != nil {
		return false, fmt.Errorf("scan: %w", sc.Err())
	}
	if w == nil {
		return true, nil // nothing to remove
	}
	if cs.hasTxnIndex {
		// The entries of dropped ABORT markers go: a read_committed
		// consumer would otherwise skip the producer's later data
		// waiting for the marker.
		var kept []abortedTxn
		for _, a := range cs.aborted {
			if !c.filter.RemovedAbort(a.lastOffset) {
				kept = append(kept, a)
			}
		}
		if err := w.writeTxnIndex(kept); err != nil {
			return false, err
		}
	}
	if err := w.finish(); err != nil {
		return false, err
	}
	ok, err := l.swapCleaned(cs, w, generation)
	if err != nil || !ok {
		return false, err
	}
	c.st.SegmentsRewritten++
	c.st.BytesWritten += w.size
	w = nil // swapped in: its files are the segment's now
	return true, nil
}

// cleanedWriter writes a cleaned segment's .log.cleaned, .index.cleaned
// and .timeindex.cleaned, building the indexes as recovery does.
type cleanedWriter struct {
	l          *Log
	s          *segment // its files are the .cleaned ones until swapped
	buf        []byte
	written    int64 // bytes of the .log written so far
	size       int64 // written + len(buf)
	idx        []byte
	bytesSince int
	hasTxn     bool // a .txnindex.cleaned was written (w.s.txn)
	committed  bool // the swap passed its commit point: the files are not ours to remove
}

func cleanedName(dir string, base int64, suffix string) string {
	return logfs.FileName(dir, base, suffix) + cleaner.CleanedSuffix
}

func newCleanedWriter(l *Log, base int64) (*cleanedWriter, error) {
	w := &cleanedWriter{l: l}
	var files [3]File
	for i, suffix := range []string{logfs.LogSuffix, logfs.IndexSuffix, logfs.TimeIndexSuffix} {
		f, err := l.fs.OpenFile(cleanedName(l.Dir(), base, suffix), os.O_RDWR|os.O_CREATE|os.O_TRUNC, FilePerm)
		if err != nil {
			for _, g := range files[:i] {
				g.Close()
			}
			l.removeCleanerFiles(base)
			return nil, fmt.Errorf("%w: %v", ErrStorage, err)
		}
		files[i] = f
	}
	w.s = &segment{base: base, log: files[0], idx: files[1], tidx: files[2], nextOffset: base,
		firstTimestamp: -1, maxTimestamp: -1, offsetOfMaxTimestamp: base, lastTimeIndexed: -1, created: l.now()}
	return w, nil
}

// add appends a batch, with an index entry (and a time index entry when
// the max timestamp grew) after every index.interval.bytes.
func (w *cleanedWriter) add(b record.Batch) error {
	s, cfg := w.s, w.l.config()
	pos := w.size
	s.observe(b)
	if w.bytesSince > cfg.IndexIntervalBytes && len(w.idx)/indexEntrySize < cfg.SegmentIndexBytes/indexEntrySize &&
		s.fitsIndex(b.LastOffset(), pos) {
		w.idx = encodeIndexEntry(w.idx, s.base, b.LastOffset(), pos)
		if err := s.appendTimeIndex(cfg.SegmentIndexBytes, false); err != nil {
			return fmt.Errorf("%w: time index: %v", ErrStorage, err)
		}
		w.bytesSince = 0
	}
	w.bytesSince += len(b)
	w.buf = append(w.buf, b...)
	w.size += int64(len(b))
	if s.firstTimestamp < 0 {
		s.firstTimestamp = b.MaxTimestamp()
	}
	s.nextOffset = b.LastOffset() + 1
	if len(w.buf) >= cleanerWriteBuffer {
		return w.flush()
	}
	return nil
}

func (w *cleanedWriter) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	if _, err := w.s.log.WriteAt(w.buf, w.written); err != nil {
		return fmt.Errorf("%w: %v", ErrStorage, err)
	}
	w.written += int64(len(w.buf))
	w.buf = w.buf[:0]
	return nil
}

// finish writes what is buffered, the offset index and the final time
// index entry (the segment's max timestamp), and fsyncs the files.
func (w *cleanedWriter) finish() error {
	if err := w.flush(); err != nil {
		return err
	}
	s := w.s
	if len(w.idx) > 0 {
		if _, err := s.idx.WriteAt(w.idx, 0); err != nil {
			return fmt.Errorf("%w: %v", ErrStorage, err)
		}
	}
	s.entries = len(w.idx) / indexEntrySize
	s.size = w.size
	s.bytesSinceIndex = w.bytesSince
	if err := s.appendTimeIndex(w.l.config().SegmentIndexBytes, true); err != nil {
		return fmt.Errorf("%w: time index: %v", ErrStorage, err)
	}
	if err := s.sync(); err != nil {
		return fmt.Errorf("%w: %v", ErrStorage, err)
	}
	return nil
}

// discard closes and removes the cleaned files (only closes them once the
// swap was committed: open finishes it).
func (w *cleanedWriter) discard() {
	w.s.close()
	if !w.committed {
		w.l.removeCleanerFiles(w.s.base)
	}
}

// removeCleanerFiles removes base's .cleaned and .swap files.
func (l *Log) removeCleanerFiles(base int64) error {
	var errs []error
	for _, suffix := range []string{logfs.LogSuffix, logfs.IndexSuffix, logfs.TimeIndexSuffix, logfs.TxnIndexSuffix} {
		for _, name := range []string{cleanedName(l.Dir(), base, suffix), logfs.FileName(l.Dir(), base, suffix) + cleaner.SwapSuffix} {
			if err := l.fs.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// swapCleaned replaces cs's segment with w's under the log lock, unless
// the log changed since planning (closed, failed, truncated, the segment
// deleted, grown or made active): then ok is false and nothing changes.
//
// The steps, each a rename: the index and time index .cleaned to .swap,
// then the .log.cleaned to .log.swap (the commit point, made durable by
// an fsync of the directory); then the index, time index and .log .swap
// files over the originals, and the directory fsynced again. A crash
// before the commit point leaves the old segment (open removes the
// .cleaned and .swap files); after it, open finishes the renames.
func (l *Log) swapCleaned(cs cleanSeg, w *cleanedWriter, generation uint64) (ok bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := -1
	for j, s := range l.mu.segments {
		if s == cs.s {
			i = j
			break
		}
	}
	if l.mu.closed || l.mu.failed != nil || l.mu.generation != generation || i < 0 ||
		i == len(l.mu.segments)-1 || cs.s.size != cs.size {
		return false, nil
	}
	suffixes := []string{logfs.IndexSuffix, logfs.TimeIndexSuffix, logfs.LogSuffix} // .log last: the commit point
	if w.hasTxn {
		suffixes = []string{logfs.IndexSuffix, logfs.TimeIndexSuffix, logfs.TxnIndexSuffix, logfs.LogSuffix}
	}
	for _, suffix := range suffixes {
		if err := l.fs.Rename(cleanedName(l.Dir(), cs.base, suffix), logfs.FileName(l.Dir(), cs.base, suffix)+cleaner.SwapSuffix); err != nil {
			return false, l.undoSwapLocked(cs.base, fmt.Errorf("%w: rename to %s: %v", ErrStorage, cleaner.SwapSuffix, err))
		}
	}
	if err := l.fs.SyncDir(l.Dir()); err != nil {
		return false, l.undoSwapLocked(cs.base, fmt.Errorf("%w: %v", ErrStorage, err))
	}
	w.committed = true
	for _, suffix := range suffixes {
		name := logfs.FileName(l.Dir(), cs.base, suffix)
		if err := l.fs.Rename(name+cleaner.SwapSuffix, name); err != nil {
			// Committed on disk but not in memory: stop writing; the next
			// open finishes the swap.
			l.mu.failed = fmt.Errorf("%w: swapping cleaned segment %d: %v", ErrStorage, cs.base, err)
			return false, l.mu.failed
		}
	}
	if err := l.fs.SyncDir(l.Dir()); err != nil {
		l.mu.failed = fmt.Errorf("%w: swapping cleaned segment %d: %v", ErrStorage, cs.base, err)
		return false, l.mu.failed
	}
	if !w.hasTxn {
		// No .txnindex when planned; keep whatever the segment has.
		w.s.txn, w.s.aborted, w.s.txnDirty = cs.s.txn, cs.s.aborted, cs.s.txnDirty
		cs.s.txn = nil
	}
	cs.s.close()
	l.mu.segments[i] = w.s
	return true, nil
}

// undoSwapLocked removes a swap that did not reach its durable commit
// point. If even that fails the log is marked failed: the next open
// decides from the files.
func (l *Log) undoSwapLocked(base int64, cause error) error {
	if err := errors.Join(l.removeCleanerFiles(base), l.fs.SyncDir(l.Dir())); err != nil {
		l.mu.failed = fmt.Errorf("%w: undoing a failed swap of segment %d: %v (after %v)", ErrStorage, base, err, cause)
		return l.mu.failed
	}
	return cause
}
