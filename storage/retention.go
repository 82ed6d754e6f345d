package storage

import (
	"errors"
	"fmt"
	"time"

	"github.com/kbroker/kbroker/storage/logfs"
)

// deletedSuffix marks a segment's .log renamed away before its files are
// removed; leftovers of a crash are removed at open.
const deletedSuffix = ".deleted"

// logStartOffsetFile is the per-directory checkpoint of log start
// offsets, in the same text format as recoveryPointFile.
const logStartOffsetFile = "log-start-offset-checkpoint"

// highWatermarkFile is the per-directory checkpoint of high watermarks
// (Kafka's replication-offset-checkpoint), same format.
const highWatermarkFile = "replication-offset-checkpoint"

// DeleteRecordsBefore raises the log start offset to offset (the
// DeleteRecords API; the caller has checked offset against the high
// watermark) and deletes the segments wholly below it, never the active
// one. An offset at or below the current log start offset changes
// nothing; one above the log end offset is ErrOffsetOutOfRange.
func (l *Log) DeleteRecordsBefore(offset int64) (newLogStartOffset int64, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return 0, fmt.Errorf("delete records %s: %w", l.Dir(), l.closedErrLocked())
	}
	if offset > l.mu.logEndOffset || offset < 0 {
		return 0, fmt.Errorf("delete records %s before %d: %w: log end offset %d", l.Dir(), offset,
			ErrOffsetOutOfRange, l.mu.logEndOffset)
	}
	if offset <= l.mu.logStartOffset {
		return l.mu.logStartOffset, nil
	}
	l.mu.logStartOffset = offset
	l.publishOffsetsLocked()
	n := 0
	for n+1 < len(l.mu.segments) && l.mu.segments[n+1].base <= offset {
		n++
	}
	if err := l.deleteOldestLocked(n, "log start offset"); err != nil {
		return l.mu.logStartOffset, fmt.Errorf("delete records %s: %w", l.Dir(), err)
	}
	return l.mu.logStartOffset, nil
}

// ApplyRetention deletes the oldest inactive segments whose largest
// timestamp is more than retentionMs before now (-1: keep forever), then
// those that can go while the log stays at or above retentionBytes (-1: no
// limit), as Kafka's deleteRetentionMsBreachedSegments and
// deleteRetentionSizeBreachedSegments do. The log start offset moves to
// the first remaining segment's base offset. A segment without
// timestamps (max timestamp -1) is not deleted by time, unless it is empty
// (an inactive segment the cleaner emptied).
//
// With a cleanup.policy without delete ("compact" alone) it deletes
// nothing: the log cleaner bounds such logs.
func (l *Log) ApplyRetention(now time.Time, retentionMs, retentionBytes int64) (deletedSegments int, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return 0, fmt.Errorf("retention %s: %w", l.Dir(), l.closedErrLocked())
	}
	if !l.config().Delete() {
		return 0, nil
	}
	retentionMs, retentionBytes = l.config().localRetention(retentionMs, retentionBytes) // tiered.go
	segs := l.mu.segments
	n := 0
	if retentionMs >= 0 {
		nowMs := now.UnixMilli()
		for n < len(segs)-1 && (segs[n].size == 0 || segs[n].maxTimestamp >= 0 && nowMs-segs[n].maxTimestamp > retentionMs) {
			n++
		}
		n = l.remoteCapLocked(n)
		if err := l.deleteOldestLocked(n, "retention.ms"); err != nil {
			return n, fmt.Errorf("retention %s: %w", l.Dir(), err)
		}
	}
	deleted := n
	segs = l.mu.segments
	n = 0
	if retentionBytes >= 0 {
		var total int64
		for _, s := range segs {
			total += s.size
		}
		diff := total - retentionBytes
		for n < len(segs)-1 && diff-segs[n].size >= 0 {
			diff -= segs[n].size
			n++
		}
		n = l.remoteCapLocked(n)
		if err := l.deleteOldestLocked(n, "retention.bytes"); err != nil {
			return deleted + n, fmt.Errorf("retention %s: %w", l.Dir(), err)
		}
	}
	return deleted + n, nil
}

// deleteOldestLocked deletes the first n segments (never the active one)
// and raises the log start offset to the next base offset. With
// file.delete.delay.ms and a Manager, the files stay renamed .deleted for
// that long (delete.go). Crash safety:
// each .log is first renamed to .log.deleted (after which the segment is
// gone for the next open: its other files are orphans, removed at load)
// and the renames happen oldest first, so a crash leaves a log that is a
// suffix of the old one.
func (l *Log) deleteOldestLocked(n int, reason string) error {
	n = min(n, len(l.mu.segments)-1)
	if n <= 0 {
		return nil
	}
	renamed := 0
	var err error
	for _, s := range l.mu.segments[:n] {
		name := logfs.FileName(l.Dir(), s.base, logfs.LogSuffix)
		if err = l.fs.Rename(name, name+deletedSuffix); err != nil {
			err = fmt.Errorf("%w: delete segment %d: %v", ErrStorage, s.base, err)
			break
		}
		renamed++
	}
	gone := l.mu.segments[:renamed]
	l.mu.segments = l.mu.segments[renamed:]
	l.mu.logStartOffset = max(l.mu.logStartOffset, l.mu.segments[0].base)
	l.publishOffsetsLocked()
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	if renamed > 0 {
		if err := l.fs.SyncDir(l.Dir()); err != nil {
			errs = append(errs, fmt.Errorf("%w: %v", ErrStorage, err))
		}
	}
	for _, s := range gone {
		l.logger.Info("deleting segment", "dir", l.Dir(), "base", s.base, "reason", reason)
		s.close()
		l.removeSegmentFiles(s.base)
	}
	return errors.Join(errs...)
}
