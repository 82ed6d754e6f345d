package storage

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kbroker/kbroker/storage/cleaner"
	"github.com/kbroker/kbroker/storage/integrity"
	"github.com/kbroker/kbroker/storage/logfs"
	"github.com/kbroker/kbroker/storage/producerstate"
)

// load opens the segments in l.Dir(), recovers them if the shutdown was not
// clean, and rebuilds the producer state. It runs before l is shared, so
// it touches l.mu's fields without locking.
func (l *Log) load(clean bool, recoveryPoint, logStartOffset int64) error {
	if err := l.fs.MkdirAll(l.Dir(), DirPerm); err != nil {
		return fmt.Errorf("%w: create %s: %w", ErrStorage, l.Dir(), err)
	}
	ents, err := l.fs.ReadDir(l.Dir())
	if err != nil {
		return fmt.Errorf("%w: list %s: %v", ErrStorage, l.Dir(), err)
	}
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	// An interrupted cleaner swap is finished or discarded first.
	if changed, err := cleaner.RecoverSwaps(l.fs, l.Dir(), names); err != nil {
		return fmt.Errorf("%w: finish cleaner swaps in %s: %v", ErrStorage, l.Dir(), err)
	} else if changed {
		if ents, err = l.fs.ReadDir(l.Dir()); err != nil {
			return fmt.Errorf("%w: list %s: %v", ErrStorage, l.Dir(), err)
		}
	}
	var bases, snaps []int64
	logs := map[int64]bool{}
	for _, e := range ents {
		name := e.Name()
		if off, ok := logfs.ParseFileName(name, logfs.LogSuffix); ok {
			bases = append(bases, off)
			logs[off] = true
		} else if off, ok := logfs.ParseFileName(name, logfs.SnapshotSuffix); ok {
			snaps = append(snaps, off)
		} else if strings.HasSuffix(name, ".tmp") || strings.HasSuffix(name, deletedSuffix) {
			// Nothing reads these (a .tmp is recreated with O_TRUNC, a
			// .deleted segment is never opened): one that stays only
			// wastes space until the next open tries again.
			if err := l.fs.Remove(filepath.Join(l.Dir(), name)); err != nil && !errors.Is(err, os.ErrNotExist) {
				l.logger.Warn("cannot remove leftover file", "dir", l.Dir(), "file", name, "err", err)
			}
		}
	}
	// An index without its .log (a crash while a segment was deleted) must
	// go: a segment created later at that base offset would open it and
	// trust its entries, and a stale .txnindex would list aborted
	// transactions that are not in the log.
	for _, e := range ents {
		for _, suffix := range []string{logfs.IndexSuffix, logfs.TimeIndexSuffix, logfs.TxnIndexSuffix} {
			if off, ok := logfs.ParseFileName(e.Name(), suffix); ok && !logs[off] {
				if err := l.fs.Remove(logfs.FileName(l.Dir(), off, suffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
					return fmt.Errorf("%w: remove orphan index %s in %s: %v", ErrStorage, e.Name(), l.Dir(), err)
				}
			}
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	now := l.now()
	if len(bases) == 0 {
		// An empty directory starts at the checkpointed log start offset
		// (a crash inside TruncateFullyAndStartAt can leave one).
		s, err := openSegment(l.fs, l.Dir(), max(logStartOffset, 0), true, now)
		if err != nil {
			return fmt.Errorf("%w: create segment in %s: %w", ErrStorage, l.Dir(), err)
		}
		if err := l.preallocateLocked(s); err != nil {
			s.close()
			return err
		}
		l.mu.segments = []*segment{s}
		if err := l.fs.SyncDir(l.Dir()); err != nil {
			return fmt.Errorf("%w: %v", ErrStorage, err)
		}
	}
	for _, base := range bases {
		s, err := openSegment(l.fs, l.Dir(), base, false, now)
		if err != nil {
			return fmt.Errorf("%w: open segment %d in %s: %w", ErrStorage, base, l.Dir(), err)
		}
		l.mu.segments = append(l.mu.segments, s)
	}

	if err := l.loadEpochs(); err != nil {
		return err
	}
	start := len(l.mu.segments) // first segment to recover batch by batch
	if !clean {
		start = l.segmentForLocked(recoveryPoint)
	}
	for i := 0; i < start; i++ {
		s := l.mu.segments[i]
		last := i == len(l.mu.segments)-1
		ok, err := l.checkSegment(s, last)
		if err != nil {
			return err
		}
		if !ok {
			l.logger.Warn("segment index or tail inconsistent; recovering it", "dir", l.Dir(), "base", s.base)
			start = i
			break
		}
	}
	if err := l.recoverFrom(start); err != nil {
		return err
	}

	last := l.activeLocked()
	l.mu.logEndOffset = last.nextOffset
	l.mu.logStartOffset = l.mu.segments[0].base
	l.mu.recoveryPoint = l.mu.logEndOffset
	if last.size > 0 {
		hdr, _, err := last.readHeader(0)
		if err != nil {
			return fmt.Errorf("read first batch of %s: %w", l.Dir(), err)
		}
		last.firstTimestamp = hdr.MaxTimestamp()
	}
	// A trusted segment's .txnindex may still hold entries past its end
	// (the .log was cut by recovery of a later segment, or the index
	// written before a crash lost the .log's tail).
	for i, s := range l.mu.segments {
		end := l.mu.logEndOffset
		if i+1 < len(l.mu.segments) {
			end = l.mu.segments[i+1].base
		}
		if err := s.truncateAborted(end); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrStorage, l.Dir(), err)
		}
	}
	if err := l.loadProducerState(snaps); err != nil {
		return err
	}
	if l.truncateEpochsLocked(l.mu.logEndOffset) || l.mu.epochsDirty {
		l.writeEpochsLocked()
	}
	// A checkpointed log start offset may lie inside the first segment
	// (DeleteRecords); it never goes below it nor past the end.
	l.mu.logStartOffset = min(max(l.mu.logStartOffset, logStartOffset), l.mu.logEndOffset)
	return nil
}

// checkSegment trusts s's files but checks that the index agrees with the
// .log: its size is whole entries and its last entry points at a batch
// with that last offset. For the active segment it also finds the log end
// offset by scanning from the last indexed batch. ok=false means recover.
func (l *Log) checkSegment(s *segment, active bool) (bool, error) {
	if s.entries < 0 || s.tentries < 0 {
		return false, nil
	}
	var pos int64
	if s.entries > 0 {
		off, p, err := s.entry(s.entries - 1)
		if err != nil {
			return false, fmt.Errorf("%w: read index of %s: %v", ErrStorage, l.Dir(), err)
		}
		hdr, _, err := s.readHeader(p)
		if err != nil || hdr.LastOffset() != off {
			return false, nil
		}
		pos = p
	}
	// The last time index entry must name a batch ending at its offset
	// and having its timestamp; it is the segment's max timestamp so far.
	scanFrom := pos
	if s.tentries > 0 {
		ts, off, err := s.timeEntry(s.tentries - 1)
		if err != nil {
			return false, fmt.Errorf("%w: read time index of %s: %v", ErrStorage, l.Dir(), err)
		}
		if off < s.base {
			return false, nil
		}
		p, err := s.lookup(off)
		if err != nil {
			return false, fmt.Errorf("%w: read index of %s: %v", ErrStorage, l.Dir(), err)
		}
		for {
			hdr, size, err := s.readHeader(p)
			if err != nil || hdr.BaseOffset() > off {
				return false, nil
			}
			if hdr.LastOffset() >= off {
				if hdr.LastOffset() != off || hdr.MaxTimestamp() != ts {
					return false, nil
				}
				break
			}
			p += size
		}
		s.maxTimestamp, s.offsetOfMaxTimestamp, s.lastTimeIndexed = ts, off, ts
		scanFrom = min(scanFrom, p)
	}
	if !active {
		return true, nil
	}
	sc := integrity.NewScanner(s.log, scanFrom, s.size)
	for {
		b, bpos, ok := sc.Next()
		if !ok {
			break
		}
		s.observe(b)
		if bpos >= pos {
			s.nextOffset = b.LastOffset() + 1
			s.bytesSinceIndex += len(b)
		}
	}
	if sc.Err() != nil {
		if errors.Is(sc.Err(), ErrStorage) {
			return false, sc.Err()
		}
		return false, nil
	}
	return true, nil
}

// recoverFrom checks segments[start:] batch by batch. The first invalid
// batch ends the log: its segment is truncated there and every later
// segment deleted.
func (l *Log) recoverFrom(start int) error {
	if start >= len(l.mu.segments) {
		return nil
	}
	minOffset := l.mu.segments[start].base
	for i := start; i < len(l.mu.segments); i++ {
		s := l.mu.segments[i]
		if s.base < minOffset {
			l.logger.Warn("segment overlaps the previous one; deleting it and later ones", "dir", l.Dir(), "base", s.base)
			return l.dropFrom(i)
		}
		truncated, err := l.recoverSegment(s, minOffset)
		if err != nil {
			return err
		}
		minOffset = s.nextOffset
		if truncated {
			return l.dropFrom(i + 1)
		}
	}
	return nil
}

// dropFrom deletes segments[i:], keeping at least one segment.
func (l *Log) dropFrom(i int) error {
	if i == 0 {
		// Keep the first segment as an empty log at its base offset.
		s := l.mu.segments[0]
		if err := errors.Join(s.log.Truncate(0), s.idx.Truncate(0), s.tidx.Truncate(0), s.sync()); err != nil {
			return fmt.Errorf("%w: %v", ErrStorage, err)
		}
		if err := s.truncateAborted(s.base); err != nil {
			return fmt.Errorf("%w: %v", ErrStorage, err)
		}
		s.size, s.entries, s.tentries, s.nextOffset, s.bytesSinceIndex = 0, 0, 0, s.base, 0
		s.restoreTimeState(timeState{0, -1, s.base, -1})
		s.firstTimestamp = -1
		i = 1
	}
	var errs []error
	for _, s := range l.mu.segments[i:] {
		l.logger.Warn("deleting segment after the end of the recovered log", "dir", l.Dir(), "base", s.base)
		if err := s.remove(l.fs, l.Dir()); err != nil {
			errs = append(errs, err)
		}
	}
	l.mu.segments = l.mu.segments[:i]
	errs = append(errs, l.fs.SyncDir(l.Dir()))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %v", ErrStorage, err)
	}
	return nil
}

// recoverSegment validates every batch of s (size, magic, CRC, offsets
// increasing from minOffset), truncates the .log after the last valid one,
// rewrites the index and fsyncs both.
func (l *Log) recoverSegment(s *segment, minOffset int64) (truncated bool, err error) {
	s.recent = nil // positions are rebuilt from the files
	minOffset = max(minOffset, s.base)
	maxEntries := l.config().SegmentIndexBytes / indexEntrySize
	var (
		idx        []byte
		validEnd   int64
		bytesSince int
		reason     error
	)
	s.nextOffset = s.base
	if err := s.tidx.Truncate(0); err != nil {
		return false, fmt.Errorf("%w: rebuild time index: %v", ErrStorage, err)
	}
	s.restoreTimeState(timeState{0, -1, s.base, -1})
	// The epoch cache is rebuilt from this segment's batches on.
	if l.truncateEpochsLocked(s.base) {
		l.mu.epochsDirty = true
	}
	sc := integrity.NewScanner(s.log, 0, s.size)
	for {
		b, pos, ok := sc.Next()
		if !ok {
			reason = sc.Err()
			break
		}
		if !b.ValidCRC() {
			reason = fmt.Errorf("%w: CRC mismatch in batch at %d", ErrCorrupt, pos)
			break
		}
		// Offsets must increase, and a segment holds only offsets within
		// int32 of its base (the index's relative offsets), as in Kafka.
		if b.BaseOffset() < minOffset || b.LastOffsetDelta() < 0 ||
			b.BaseOffset() > s.base+math.MaxInt32-int64(b.LastOffsetDelta()) {
			reason = fmt.Errorf("%w: batch at %d has offsets [%d, %d], want >= %d", ErrCorrupt, pos,
				b.BaseOffset(), b.LastOffset(), minOffset)
			break
		}
		s.observe(b)
		if l.assignEpochLocked(b.PartitionLeaderEpoch(), b.BaseOffset()) {
			l.mu.epochsDirty = true
		}
		if bytesSince > l.config().IndexIntervalBytes && len(idx)/indexEntrySize < maxEntries && s.fitsIndex(b.LastOffset(), pos) {
			idx = encodeIndexEntry(idx, s.base, b.LastOffset(), pos)
			if err := s.appendTimeIndex(l.config().SegmentIndexBytes, false); err != nil {
				return false, fmt.Errorf("%w: rebuild time index: %v", ErrStorage, err)
			}
			bytesSince = 0
		}
		bytesSince += len(b)
		minOffset = b.LastOffset() + 1
		s.nextOffset = minOffset
		validEnd = pos + int64(len(b))
	}
	if reason != nil && errors.Is(reason, ErrStorage) {
		return false, fmt.Errorf("recover %s segment %d: %w", l.Dir(), s.base, reason)
	}
	if validEnd < s.size {
		l.logger.Warn("truncating segment at the first invalid batch", "dir", l.Dir(), "base", s.base,
			"position", validEnd, "size", s.size, "reason", reason)
		if err := s.log.Truncate(validEnd); err != nil {
			return false, fmt.Errorf("%w: truncate %s segment %d: %v", ErrStorage, l.Dir(), s.base, err)
		}
		s.size = validEnd
		truncated = true
	}
	if err := s.idx.Truncate(0); err != nil {
		return false, fmt.Errorf("%w: rebuild index: %v", ErrStorage, err)
	}
	if len(idx) > 0 {
		if _, err := s.idx.WriteAt(idx, 0); err != nil {
			return false, fmt.Errorf("%w: rebuild index: %v", ErrStorage, err)
		}
	}
	s.entries = len(idx) / indexEntrySize
	s.bytesSinceIndex = bytesSince
	// Aborts whose marker is gone go; the producer state replay re-adds
	// any the crash lost.
	if err := s.truncateAborted(s.nextOffset); err != nil {
		return false, fmt.Errorf("%w: %v", ErrStorage, err)
	}
	if err := s.appendTimeIndex(l.config().SegmentIndexBytes, true); err != nil {
		return false, fmt.Errorf("%w: rebuild time index: %v", ErrStorage, err)
	}
	if err := s.sync(); err != nil {
		return false, fmt.Errorf("%w: %v", ErrStorage, err)
	}
	return truncated, nil
}

// loadProducerState loads the newest usable snapshot at or below the log
// end offset and replays the batch headers after it; with none it scans
// the whole log. Other snapshots are deleted. One above the log end offset
// that cannot be deleted is an error: once the log grows past it again, a
// later open would load it as the producer state of records it never saw.
func (l *Log) loadProducerState(snaps []int64) error {
	sort.Slice(snaps, func(i, j int) bool { return snaps[i] > snaps[j] })
	from := l.mu.logStartOffset
	used := int64(-1)
	for _, off := range snaps {
		if off > l.mu.logEndOffset || off < l.mu.logStartOffset || used >= 0 {
			continue
		}
		path := logfs.FileName(l.Dir(), off, logfs.SnapshotSuffix)
		buf, err := logfs.ReadFile(l.fs, path)
		if err == nil {
			var m producerstate.State
			if m, err = producerstate.DecodeSnapshot(buf); err == nil {
				l.mu.producers, from, used = m, off, off
				continue
			}
			if errors.Is(err, producerstate.ErrNewerSnapshot) {
				return fmt.Errorf("%w: %w: %s: %v", ErrStorage, ErrNewerFormat, path, err)
			}
		}
		l.logger.Warn("ignoring producer snapshot", "dir", l.Dir(), "offset", off, "err", err)
	}
	l.mu.txns = producerstate.NewTxnTracker(l.mu.producers)
	l.mu.snapshotOffset = used
	removed := false
	for _, off := range snaps {
		if off == used {
			continue
		}
		err := l.fs.Remove(logfs.FileName(l.Dir(), off, logfs.SnapshotSuffix))
		switch {
		case err == nil:
			removed = true
		case errors.Is(err, os.ErrNotExist):
		case off > l.mu.logEndOffset:
			return fmt.Errorf("%w: remove producer snapshot %d above the log end offset %d of %s: %v",
				ErrStorage, off, l.mu.logEndOffset, l.Dir(), err)
		default:
			// Older than the one used, below the log start offset, or
			// unreadable: never loaded while a newer one is.
			l.logger.Warn("cannot remove producer snapshot", "dir", l.Dir(), "offset", off, "err", err)
		}
	}
	if removed {
		if err := l.fs.SyncDir(l.Dir()); err != nil {
			return fmt.Errorf("%w: %v", ErrStorage, err)
		}
	}
	for i := l.segmentForLocked(from); i < len(l.mu.segments); i++ {
		s := l.mu.segments[i]
		var pos int64
		if i == l.segmentForLocked(from) {
			p, err := s.lookup(from)
			if err != nil {
				return fmt.Errorf("%w: index of %s: %v", ErrStorage, l.Dir(), err)
			}
			pos = p
		}
		sc := integrity.NewScanner(s.log, pos, s.size)
		for {
			b, _, ok := sc.Next()
			if !ok {
				break
			}
			if b.BaseOffset() >= from {
				if err := l.applyBatchLocked(b); err != nil {
					return fmt.Errorf("replay producer state of %s: %w", l.Dir(), err)
				}
			}
		}
		if sc.Err() != nil {
			if errors.Is(sc.Err(), ErrStorage) {
				return fmt.Errorf("replay producer state of %s: %w", l.Dir(), sc.Err())
			}
			l.logger.Warn("producer state replay stopped at a bad batch", "dir", l.Dir(), "err", sc.Err())
			break
		}
	}
	return nil
}

// writeSnapshotLocked writes the producer state at the log end offset.
func (l *Log) writeSnapshotLocked() error {
	off := l.mu.logEndOffset
	name := logfs.FileName(l.Dir(), off, logfs.SnapshotSuffix)
	if err := logfs.WriteFileAtomic(l.fs, l.Dir(), name, l.mu.producers.Encode()); err != nil {
		return err
	}
	l.mu.snapshotOffset = off
	// Keep only the newest snapshot. The others are below it, so states of
	// a prefix of this log: one left behind is never loaded while this one
	// is, and is correct if a truncation removes this one.
	ents, err := l.fs.ReadDir(l.Dir())
	if err != nil {
		l.logger.Warn("cannot list older producer snapshots", "dir", l.Dir(), "err", err)
		return nil
	}
	for _, e := range ents {
		if o, ok := logfs.ParseFileName(e.Name(), logfs.SnapshotSuffix); ok && o != off {
			if err := l.fs.Remove(logfs.FileName(l.Dir(), o, logfs.SnapshotSuffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
				l.logger.Warn("cannot remove older producer snapshot", "dir", l.Dir(), "offset", o, "err", err)
			}
		}
	}
	return nil
}
