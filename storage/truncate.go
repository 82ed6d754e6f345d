package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kbroker/kbroker/storage/logfs"
	"github.com/kbroker/kbroker/storage/producerstate"
	"github.com/kbroker/kbroker/wire/record"
)

// TruncateTo drops every record at or after offset: later segments are
// deleted and the segment holding offset is cut at a batch boundary (an
// offset inside a batch truncates to that batch's base offset). The
// indexes, the leader epoch cache and the producer state (from the newest
// snapshot at or below the new end, replayed) follow. An offset at or past
// the log end offset changes nothing; one below the log start offset
// empties the log and restarts it at offset.
//
// Crash safety: segments are removed newest first (each .log renamed
// away atomically), then the cut segment is truncated and fsynced, then
// the epoch file is rewritten; at every step the files on disk are a
// prefix of the old log, and recovery (which drops epoch entries at or
// past the log end) reopens them consistently.
func (l *Log) TruncateTo(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return fmt.Errorf("truncate %s: %w", l.Dir(), err)
	}
	if offset >= l.mu.logEndOffset {
		return nil
	}
	l.mu.generation++
	if offset < l.mu.logStartOffset {
		return l.truncateFullyLocked(offset)
	}
	i := l.segmentForLocked(offset)
	s := l.mu.segments[i]
	cut := s.size
	pos, found, err := l.locateLocked(s, offset)
	var ce *CorruptBatchError
	switch {
	case errors.As(err, &ce):
		cut = ce.Position // a bad header (repairing a corrupt batch): nothing from it on is kept
	case err != nil:
		return fmt.Errorf("truncate %s: %w", l.Dir(), err)
	case found:
		cut = pos
	}
	if err := l.deleteNewestLocked(i + 1); err != nil {
		return fmt.Errorf("truncate %s: %w", l.Dir(), err)
	}
	if err := s.log.Truncate(cut); err != nil {
		l.mu.failed = fmt.Errorf("%w: truncate segment %d: %v", ErrStorage, s.base, err)
		return l.mu.failed
	}
	s.size, s.preallocated = cut, false
	// Rebuild the indexes, the max timestamp and the next offset of the
	// cut segment from what is left, and fsync it.
	if _, err := l.recoverSegment(s, s.base); err != nil {
		l.mu.failed = err
		return err
	}
	if s.size == 0 {
		s.firstTimestamp = -1
	}
	l.mu.logEndOffset = s.nextOffset
	l.mu.logStartOffset = min(l.mu.logStartOffset, l.mu.logEndOffset)
	l.publishOffsetsLocked()
	l.published.highWatermark.Store(min(l.published.highWatermark.Load(), l.mu.logEndOffset))
	l.mu.recoveryPoint = min(l.mu.recoveryPoint, l.mu.logEndOffset)
	if err := l.flushLocked(); err != nil {
		return err
	}
	if l.truncateEpochsLocked(l.mu.logEndOffset) || l.mu.epochsDirty {
		l.writeEpochsLocked()
	}
	if err := l.rebuildProducerStateLocked(); err != nil {
		l.mu.failed = err
		return err
	}
	l.logger.Info("truncated log", "dir", l.Dir(), "offset", offset, "log_end_offset", l.mu.logEndOffset)
	return nil
}

// TruncateFullyAndStartAt deletes every segment and starts an empty log at
// offset (log start offset = log end offset = offset), clearing the epoch
// cache and the producer state.
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return fmt.Errorf("truncate %s: %w", l.Dir(), err)
	}
	if offset < 0 {
		return fmt.Errorf("truncate %s: %w: offset %d", l.Dir(), ErrOffsetOutOfRange, offset)
	}
	return l.truncateFullyLocked(offset)
}

func (l *Log) writableLocked() error {
	if l.mu.closed {
		return l.closedErrLocked()
	}
	if l.dirGone != nil {
		if err := l.dirGone(); err != nil {
			return err
		}
	}
	return l.mu.failed
}

// truncateFullyLocked removes all segments newest first, then creates the
// new empty one. A crash before the end leaves a prefix of the old log or,
// once all are gone, an empty directory that opens at the checkpointed log
// start offset.
func (l *Log) truncateFullyLocked(offset int64) error {
	l.mu.generation++
	if err := l.deleteNewestLocked(0); err != nil {
		return fmt.Errorf("truncate %s: %w", l.Dir(), err)
	}
	l.mu.epochs = nil
	l.writeEpochsLocked()
	l.mu.producers = make(producerstate.State)
	l.mu.txns = producerstate.TxnTracker{}
	l.mu.snapshotOffset = -1
	if _, err := l.removeSnapshotsLocked(-1); err != nil {
		l.mu.failed = fmt.Errorf("truncate %s fully: %w", l.Dir(), err)
		return l.mu.failed
	}
	s, err := openSegment(l.fs, l.Dir(), offset, true, l.now())
	if err == nil && (s.size != 0 || s.entries != 0 || s.tentries != 0 || s.txn != nil) {
		err = errors.Join(s.log.Truncate(0), s.idx.Truncate(0), s.tidx.Truncate(0), s.truncateAborted(offset))
		s.size, s.entries, s.tentries = 0, 0, 0
	}
	if err == nil {
		err = l.preallocateLocked(s)
	}
	if err == nil {
		err = l.fs.SyncDir(l.Dir())
	}
	if err != nil {
		l.mu.failed = fmt.Errorf("%w: truncate %s fully: %v", ErrStorage, l.Dir(), err)
		return l.mu.failed
	}
	l.mu.segments = []*segment{s}
	l.mu.logStartOffset, l.mu.logEndOffset, l.mu.recoveryPoint = offset, offset, offset
	l.publishOffsetsLocked()
	l.published.highWatermark.Store(offset)
	l.mu.unflushed = 0
	l.logger.Info("truncated log fully", "dir", l.Dir(), "offset", offset)
	return nil
}

// deleteNewestLocked deletes segments[from:], newest first. from == 0
// leaves the log without segments: the caller creates one.
func (l *Log) deleteNewestLocked(from int) error {
	var errs []error
	for len(l.mu.segments) > from {
		s := l.mu.segments[len(l.mu.segments)-1]
		name := logfs.FileName(l.Dir(), s.base, logfs.LogSuffix)
		if err := l.fs.Rename(name, name+deletedSuffix); err != nil {
			err = fmt.Errorf("%w: delete segment %d: %v", ErrStorage, s.base, err)
			if from == 0 {
				l.mu.failed = err // the log may now have no readable segments
			}
			return errors.Join(append(errs, err)...)
		}
		l.mu.segments = l.mu.segments[:len(l.mu.segments)-1]
		s.close()
		// As retention does: kept renamed .deleted for
		// file.delete.delay.ms (Kafka's asyncDeleteSegment on truncation).
		l.removeSegmentFiles(s.base)
	}
	if err := l.fs.SyncDir(l.Dir()); err != nil {
		errs = append(errs, fmt.Errorf("%w: %v", ErrStorage, err))
	}
	return errors.Join(errs...)
}

// removeSnapshotsLocked removes the producer snapshots above
// keepAtOrBelow (all with -1) and returns the offsets of those kept. A
// snapshot left above the new log end offset would, once the log grows
// past it again, be loaded at the next open as the producer state of
// records it never saw; so a failure is returned (and fails the log), and
// the removals are made durable before the log grows again.
func (l *Log) removeSnapshotsLocked(keepAtOrBelow int64) ([]int64, error) {
	ents, err := l.fs.ReadDir(l.Dir())
	if err != nil {
		return nil, fmt.Errorf("%w: list producer snapshots of %s: %v", ErrStorage, l.Dir(), err)
	}
	var (
		kept    []int64
		errs    []error
		removed bool
	)
	for _, e := range ents {
		o, ok := logfs.ParseFileName(e.Name(), logfs.SnapshotSuffix)
		if !ok {
			continue
		}
		if keepAtOrBelow >= 0 && o <= keepAtOrBelow {
			kept = append(kept, o)
			continue
		}
		if err := l.fs.Remove(filepath.Join(l.Dir(), e.Name())); err == nil {
			removed = true
		} else if !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if removed {
		errs = append(errs, l.fs.SyncDir(l.Dir()))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%w: remove producer snapshots above %d in %s: %v", ErrStorage, keepAtOrBelow, l.Dir(), err)
	}
	return kept, nil
}

// rebuildProducerStateLocked reloads the producer state from the newest
// snapshot at or below the log end offset and replays the rest.
func (l *Log) rebuildProducerStateLocked() error {
	snaps, err := l.removeSnapshotsLocked(l.mu.logEndOffset)
	if err != nil {
		return err
	}
	l.mu.producers = make(producerstate.State)
	if err := l.loadProducerState(snaps); err != nil {
		return err
	}
	l.mu.txns.OnHighWatermark(l.published.highWatermark.Load())
	return nil
}

// AppendAsFollower appends batches fetched from the leader byte for byte:
// each must be whole, magic 2, CRC-valid, and start at the log end offset
// (the previous batch's last offset + 1; with a compact cleanup.policy at
// or after it, as the leader's cleaner may have removed the offsets
// between, like Kafka's follower). Nothing is assigned or
// rewritten. The indexes, the leader epoch cache and the producer state
// follow. If any batch is refused, nothing is written. lastOffset is the
// last offset appended (log end offset - 1).
func (l *Log) AppendAsFollower(batches []byte) (lastOffset int64, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return 0, fmt.Errorf("append to %s: %w", l.Dir(), err)
	}
	var list []record.Batch
	next := l.mu.logEndOffset
	compact := l.config().Compact()
	for rest := batches; len(rest) > 0; {
		if len(rest) < record.HeaderSize {
			return 0, fmt.Errorf("append to %s: %w: %d trailing bytes", l.Dir(), ErrCorrupt, len(rest))
		}
		size, err := record.PeekSize(rest)
		if err != nil || size < record.HeaderSize || size > len(rest) {
			return 0, fmt.Errorf("append to %s: %w: batch of %d bytes in %d", l.Dir(), ErrCorrupt, size, len(rest))
		}
		b := record.Batch(rest[:size])
		rest = rest[size:]
		switch {
		case b.Magic() != record.MagicV2:
			return 0, fmt.Errorf("append to %s: %w: magic %d", l.Dir(), ErrInvalidRecord, b.Magic())
		case !b.ValidCRC():
			return 0, fmt.Errorf("append to %s: %w: CRC mismatch at offset %d", l.Dir(), ErrCorrupt, b.BaseOffset())
		case b.BaseOffset() < next || (b.BaseOffset() > next && !compact):
			return 0, fmt.Errorf("append to %s: %w: batch at %d, log end offset %d", l.Dir(), ErrInvalidRecord, b.BaseOffset(), next)
		case b.LastOffsetDelta() < 0 || b.BaseOffset() > (1<<62)-int64(b.LastOffsetDelta()):
			return 0, fmt.Errorf("append to %s: %w: lastOffsetDelta %d", l.Dir(), ErrInvalidRecord, b.LastOffsetDelta())
		}
		next = b.LastOffset() + 1
		list = append(list, b)
	}
	var messages int64
	for _, b := range list {
		if err := l.appendLocked(b); err != nil {
			return l.mu.logEndOffset - 1, fmt.Errorf("append to %s: %w", l.Dir(), err)
		}
		if err := l.applyBatchLocked(b); err != nil {
			return l.mu.logEndOffset - 1, fmt.Errorf("append to %s: %w", l.Dir(), err)
		}
		l.noteBatchEpochLocked(b)
		messages += int64(b.RecordCount())
	}
	if err := l.maybeFlushLocked(messages); err != nil {
		return l.mu.logEndOffset - 1, fmt.Errorf("append to %s: %w", l.Dir(), err)
	}
	return l.mu.logEndOffset - 1, nil
}
