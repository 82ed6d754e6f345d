package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kbroker/kbroker/storage/cleaner"
	"github.com/kbroker/kbroker/storage/logfs"
)

// Moving a log to another log directory (AlterReplicaLogDirs, KIP-113).
//
// Kafka copies into a future log (<topic>-<partition>.<id>-future in the
// destination) that a ReplicaAlterLogDirsThread keeps fetching from the
// current log until it catches up, then swaps them under the partition's
// lock. MoveLog does the same with files instead of a fetcher:
//
//  1. Without any lock it copies the inactive segments (immutable, except
//     that the cleaner swaps in a new file and truncation cuts them) and
//     the active segment's bytes written so far into the future
//     directory. Appends, reads, retention and cleaning go on.
//  2. Holding the Manager's lock and the log's (appends wait), it copies
//     what changed since: the active segment's tail (a file it copied
//     keeps its inode and was only appended to, unless the log's
//     generation says it was truncated), any file replaced or new
//     (cleaned segments, rolled segments, indexes, snapshots, the leader
//     epoch checkpoint), and removes from the copy what is gone
//     (retention). Every copied file and the directory are fsynced.
//  3. Commit, still under both locks: the current directory is renamed
//     <topic>-<partition>.<id>-delete and its log dir fsynced (from here
//     the future is the only complete log), then the future is renamed
//     <topic>-<partition> and the destination fsynced. The same *Log
//     then loads the new directory's segments in place of the old ones
//     (its offsets, producer state and epochs do not change), so holders
//     of the log (replication's partition) never see the move. The old
//     directory is removed after file.delete.delay.ms.
//
// A crash leaves a consistent state (OpenManager, resolveFutures): a
// future directory next to a current directory of the same partition is
// an unfinished copy and is removed (the current log is complete); a
// future directory with no current one was committed (step 3 renamed the
// current away) and is renamed into place.

const futureDirSuffix = "-future"

// parseFutureDirName parses "<topic>-<partition>.<id>-future".
func parseFutureDirName(name string) (topicPartition, bool) {
	base, ok := strings.CutSuffix(name, futureDirSuffix)
	if !ok {
		return topicPartition{}, false
	}
	i := strings.LastIndexByte(base, '.')
	if i <= 0 {
		return topicPartition{}, false
	}
	return parseDirName(base[:i])
}

// logMove is a move in progress, shown by LogDirs as the future replica.
type logMove struct {
	from, to *logDir
	path     string // the future directory
	copied   atomic.Int64
	// endOffset: the offsets below are in the future directory.
	endOffset atomic.Int64
	aborted   atomic.Bool // the partition was deleted meanwhile
}

// resolveFutures finishes or discards the moves a crash interrupted. It
// runs in OpenManager, before the Manager is shared.
func (m *Manager) resolveFutures() {
	for _, d := range m.dirs {
		for tp, path := range d.futures {
			if cur := m.dirOfPartitionLocked(tp); cur != nil {
				m.logger.Warn("removing the copy of an interrupted log dir move", "future", path, "current", filepath.Join(cur.path, tp.dirName()))
				if err := m.fs.RemoveAll(path); err != nil {
					m.logger.Warn("cannot remove the future log of an interrupted move", "dir", path, "err", err)
				}
				continue
			}
			dst := filepath.Join(d.path, tp.dirName())
			if err := m.fs.Rename(path, dst); err != nil {
				m.logger.Error("cannot finish an interrupted log dir move", "future", path, "err", err)
				continue
			}
			if err := m.fs.SyncDir(d.path); err != nil {
				m.logger.Warn("syncing log dir after finishing a move", "dir", d.path, "err", err)
			}
			m.logger.Info("finished a log dir move interrupted by a crash", "dir", dst)
			d.partitions[tp] = true
		}
		clear(d.futures)
	}
}

// dirByPath returns the log directory configured as path.
func (m *Manager) dirByPath(path string) *logDir {
	path = filepath.Clean(path)
	for _, d := range m.dirs {
		if d.cleanPath == path {
			return d
		}
	}
	return nil
}

// abortMoveLocked makes a move of tp in progress give up; its copier
// removes the future directory.
func (m *Manager) abortMoveLocked(tp topicPartition) {
	if mv := m.mu.moving[tp]; mv != nil {
		mv.aborted.Store(true)
		delete(m.mu.moving, tp)
	}
}

// ErrMoveInProgress is MoveLog's error while the partition's log is
// already being moved.
var ErrMoveInProgress = errors.New("storage: log dir move already in progress")

// CheckMoveTarget checks that dest can take a moved log: it is one of
// log.dirs (else ErrLogDirNotFound) and no log directory is offline
// (ErrLogDirOffline: as Kafka, no future log is created while one is, so
// that a partition never has copies in several directories a restart
// would have to choose from).
func (m *Manager) CheckMoveTarget(dest string) error {
	if m.dirByPath(dest) == nil {
		return fmt.Errorf("%w: %s", ErrLogDirNotFound, dest)
	}
	if off := m.OfflineDirs(); len(off) > 0 {
		return fmt.Errorf("%w: %v", ErrLogDirOffline, off)
	}
	return nil
}

// SetPreferredDir makes a partition not yet created on this broker go to
// dest when it is (Kafka's preferred log dir, set by AlterReplicaLogDirs
// before the replica exists).
func (m *Manager) SetPreferredDir(topic string, partition int32, dest string) error {
	d := m.dirByPath(dest)
	if d == nil {
		return fmt.Errorf("%w: %s", ErrLogDirNotFound, dest)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mu.preferred[topicPartition{topic, partition}] = d
	return nil
}

// DirOf returns the log directory holding the partition, if any.
func (m *Manager) DirOf(topic string, partition int32) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if d := m.dirOfPartitionLocked(topicPartition{topic, partition}); d != nil {
		return d.path, true
	}
	return "", false
}

// copiedFile is what step 1 copied of one file.
type copiedFile struct {
	fi os.FileInfo // the source when copied
	n  int64       // bytes copied
}

// MoveLog moves the open log of a partition to dest, another of the
// Manager's log directories, as described above. It returns once the log
// is in dest, or with the reason it is not (the log then stays where it
// was, unchanged). A move to the directory the log is in does nothing.
func (m *Manager) MoveLog(ctx context.Context, topic string, partition int32, dest string) error {
	tp := topicPartition{topic, partition}
	if err := m.CheckMoveTarget(dest); err != nil {
		return err
	}
	m.mu.Lock()
	if m.mu.closed {
		m.mu.Unlock()
		return ErrClosed
	}
	l, ok := m.mu.logs[tp]
	from, to := m.dirOfPartitionLocked(tp), m.dirByPath(dest)
	switch {
	case !ok || from == nil:
		m.mu.Unlock()
		return fmt.Errorf("storage: move %s-%d: %w", topic, partition, os.ErrNotExist)
	case from == to:
		m.mu.Unlock()
		return nil
	case m.mu.moving[tp] != nil:
		m.mu.Unlock()
		return ErrMoveInProgress
	}
	mv := &logMove{from: from, to: to, path: filepath.Join(to.path, tp.dirName()+"."+uniqueID()+futureDirSuffix)}
	m.mu.moving[tp] = mv
	m.mu.Unlock()

	committed := false
	defer func() {
		if committed {
			return
		}
		m.mu.Lock()
		if m.mu.moving[tp] == mv {
			delete(m.mu.moving, tp)
		}
		m.mu.Unlock()
		if err := m.fs.RemoveAll(mv.path); err != nil {
			m.logger.Warn("removing the future log of a failed move", "dir", mv.path, "err", err)
		}
	}()
	if err := m.fs.MkdirAll(mv.path, DirPerm); err != nil {
		return fmt.Errorf("%w: create %s: %v", ErrStorage, mv.path, err)
	}
	start := time.Now()
	copied, gen, err := m.precopy(ctx, l, mv)
	if err != nil {
		return fmt.Errorf("storage: move %s-%d to %s: %w", topic, partition, dest, err)
	}
	unlockedBytes, locked := mv.copied.Load(), time.Now()
	committed, err = m.finishMove(tp, l, mv, copied, gen)
	if err != nil {
		return fmt.Errorf("storage: move %s-%d to %s: %w", topic, partition, dest, err)
	}
	// locked is how long appends to the log waited (Manager.mu too).
	m.logger.Info("moved log to another log dir", "topic", topic, "partition", partition, "from", from.path, "to", to.path,
		"bytes", mv.copied.Load(), "bytes_unlocked", unlockedBytes, "took", time.Since(start), "locked", time.Since(locked))
	return nil
}

// precopy is step 1: the inactive segments' files and the active
// segment's bytes so far, without the log's lock.
func (m *Manager) precopy(ctx context.Context, l *Log, mv *logMove) (map[string]copiedFile, uint64, error) {
	type segSnap struct{ base, size, next int64 }
	l.mu.RLock()
	if l.mu.closed || l.mu.failed != nil {
		err := cmpErr(l.mu.failed, ErrClosed)
		l.mu.RUnlock()
		return nil, 0, err
	}
	gen := l.mu.generation
	segs := make([]segSnap, len(l.mu.segments))
	for i, s := range l.mu.segments {
		segs[i] = segSnap{s.base, s.size, s.nextOffset}
	}
	l.mu.RUnlock()
	src := l.Dir()
	copied := map[string]copiedFile{}
	for i, s := range segs {
		active := i == len(segs)-1
		suffixes := []string{logfs.LogSuffix, logfs.IndexSuffix, logfs.TimeIndexSuffix, logfs.TxnIndexSuffix}
		if active {
			suffixes = suffixes[:1] // its indexes are recopied under the lock
		}
		for _, suf := range suffixes {
			if mv.aborted.Load() {
				return nil, 0, errors.New("the partition was deleted")
			}
			if err := ctx.Err(); err != nil {
				return nil, 0, err
			}
			name := filepath.Base(logfs.FileName("", s.base, suf))
			limit := int64(-1)
			if active {
				limit = s.size // a preallocated file is longer than its data
			}
			cf, err := m.copyFile(ctx, filepath.Join(src, name), filepath.Join(mv.path, name), 0, limit, mv)
			switch {
			case errors.Is(err, os.ErrNotExist):
				continue // deleted by retention, or no .txnindex
			case err != nil:
				return nil, 0, err
			}
			copied[name] = cf
		}
		mv.endOffset.Store(s.next)
	}
	return copied, gen, nil
}

// cmpErr returns the first non-nil error.
func cmpErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// finishMove is steps 2 and 3 under the Manager's and the log's locks. It
// reports whether the move committed (the current directory was renamed
// away); after that the future directory must not be removed.
func (m *Manager) finishMove(tp topicPartition, l *Log, mv *logMove, copied map[string]copiedFile, gen uint64) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.mu.closed:
		return false, ErrClosed
	case mv.aborted.Load() || m.mu.logs[tp] != l || m.mu.moving[tp] != mv:
		return false, errors.New("the partition was deleted")
	case mv.from.offline() != nil || mv.to.offline() != nil:
		return false, ErrLogDirOffline
	}
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed || l.mu.failed != nil {
		return false, cmpErr(l.mu.failed, ErrClosed)
	}
	if l.mu.epochsDirty {
		l.writeEpochsLocked()
	}
	src := l.Dir()
	ents, err := m.fs.ReadDir(src)
	if err != nil {
		return false, fmt.Errorf("%w: list %s: %v", ErrStorage, src, err)
	}
	active := l.activeLocked()
	activeLog := filepath.Base(logfs.FileName("", active.base, logfs.LogSuffix))
	want := map[string]bool{}
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || strings.HasSuffix(name, deletedSuffix) || strings.HasSuffix(name, cleaner.CleanedSuffix) ||
			strings.HasSuffix(name, cleaner.SwapSuffix) || strings.HasSuffix(name, ".tmp") {
			continue
		}
		want[name] = true
		if err := m.syncFile(src, name, name == activeLog, active.size, copied[name], gen == l.mu.generation, mv); err != nil {
			return false, err
		}
	}
	have, err := m.fs.ReadDir(mv.path)
	if err != nil {
		return false, fmt.Errorf("%w: list %s: %v", ErrStorage, mv.path, err)
	}
	for _, e := range have {
		if !want[e.Name()] {
			if err := m.fs.Remove(filepath.Join(mv.path, e.Name())); err != nil {
				return false, fmt.Errorf("%w: %v", ErrStorage, err)
			}
		}
	}
	if err := m.fs.SyncDir(mv.path); err != nil {
		return false, fmt.Errorf("%w: fsync %s: %v", ErrStorage, mv.path, err)
	}
	mv.endOffset.Store(l.mu.logEndOffset)

	// Commit: the current directory goes first, so that a crash leaves
	// either it (and a future to discard) or only the complete future.
	delete(m.mu.moving, tp)
	deleted := src + "." + uniqueID() + deleteDirSuffix
	if err := m.fs.Rename(src, deleted); err != nil {
		return false, fmt.Errorf("%w: rename %s: %v", ErrStorage, src, err)
	}
	if err := m.fs.SyncDir(mv.from.path); err != nil {
		l.mu.failed = fmt.Errorf("%w: fsync %s after renaming the moved log: %v", ErrStorage, mv.from.path, err)
		return true, l.mu.failed
	}
	dst := filepath.Join(mv.to.path, tp.dirName())
	if err := m.fs.Rename(mv.path, dst); err != nil {
		l.mu.failed = fmt.Errorf("%w: rename %s: %v", ErrStorage, mv.path, err)
		return true, l.mu.failed
	}
	if err := m.fs.SyncDir(mv.to.path); err != nil {
		l.mu.failed = fmt.Errorf("%w: fsync %s: %v", ErrStorage, mv.to.path, err)
		return true, l.mu.failed
	}
	if err := l.reloadLocked(dst); err != nil {
		return true, err
	}
	l.dirGone = dirWatcher{m}.Gone(dst)

	delete(mv.from.partitions, tp)
	mv.to.partitions[tp] = true
	mv.to.recoveryPoints[tp] = l.mu.recoveryPoint
	delete(mv.from.recoveryPoints, tp)
	for _, cp := range []func(*logDir) *offsetCheckpoint{
		func(d *logDir) *offsetCheckpoint { return &d.logStartOffsets },
		func(d *logDir) *offsetCheckpoint { return &d.highWatermarks },
	} {
		if off, ok := cp(mv.from).offsets[tp]; ok {
			cp(mv.to).offsets[tp] = off
			cp(mv.to).dirty = true
			delete(cp(mv.from).offsets, tp)
			cp(mv.from).dirty = true
		}
	}
	if offs, err := readCleanerCheckpoint(m.fs, mv.from.path); err == nil {
		if off, ok := offs[tp]; ok {
			if err := updateCleanerCheckpoint(m.fs, mv.to.path, tp, off); err != nil {
				m.logger.Warn("moving the cleaner checkpoint of a moved log", "dir", mv.to.path, "err", err)
			}
			if err := updateCleanerCheckpoint(m.fs, mv.from.path, tp, -1); err != nil {
				m.logger.Warn("moving the cleaner checkpoint of a moved log", "dir", mv.from.path, "err", err)
			}
		}
	}
	delay := time.Duration(l.config().FileDeleteDelayMs) * time.Millisecond
	m.deletes.addDir(deleted, time.Now().Add(delay))
	return true, nil
}

// syncFile brings the future copy of src/name up to date (step 2).
// prev is what step 1 copied of it (nothing for the active segment's
// indexes, snapshots and checkpoints, which are small and copied here).
// unchanged says the log was not truncated since step 1: then a file
// step 1 copied that still has the same inode is the same file, only
// appended to if it is a .log (the then active segment); the cleaner
// replaces files (a new inode) and retention removes them. After a
// truncation everything is copied again.
func (m *Manager) syncFile(src, name string, isActive bool, activeSize int64, prev copiedFile, unchanged bool, mv *logMove) error {
	path := filepath.Join(src, name)
	f, err := m.fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("%w: open %s: %v", ErrStorage, path, err)
	}
	fi, err := f.Stat()
	f.Close()
	if err != nil {
		return fmt.Errorf("%w: stat %s: %v", ErrStorage, path, err)
	}
	size := fi.Size()
	if isActive {
		size = activeSize // a preallocated file is longer than its data
	}
	from := int64(0)
	if unchanged && prev.fi != nil && os.SameFile(prev.fi, fi) {
		switch {
		case !strings.HasSuffix(name, logfs.LogSuffix):
			return nil // an inactive segment's index: immutable
		case size == prev.n:
			return nil
		case size > prev.n:
			from = prev.n // appended to since
		}
	}
	_, err = m.copyFile(context.Background(), path, filepath.Join(mv.path, name), from, size, mv)
	return err
}

// copyFile copies src's bytes [from, limit) (limit -1: to its end) to
// the same place in dst, cuts dst there and fsyncs it.
func (m *Manager) copyFile(ctx context.Context, src, dst string, from, limit int64, mv *logMove) (copiedFile, error) {
	in, err := m.fs.OpenFile(src, os.O_RDONLY, 0)
	if err != nil {
		return copiedFile{}, err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return copiedFile{}, fmt.Errorf("%w: stat %s: %v", ErrStorage, src, err)
	}
	if limit < 0 || limit > fi.Size() {
		limit = fi.Size()
	}
	flag := os.O_RDWR | os.O_CREATE
	if from == 0 {
		flag |= os.O_TRUNC
	}
	out, err := m.fs.OpenFile(dst, flag, FilePerm)
	if err != nil {
		return copiedFile{}, fmt.Errorf("%w: create %s: %v", ErrStorage, dst, err)
	}
	buf := make([]byte, 1<<20)
	for off := from; off < limit; {
		if err := ctx.Err(); err != nil {
			out.Close()
			return copiedFile{}, err
		}
		n := int(min(int64(len(buf)), limit-off))
		k, rerr := in.ReadAt(buf[:n], off)
		if k > 0 {
			if _, werr := out.WriteAt(buf[:k], off); werr != nil {
				out.Close()
				return copiedFile{}, fmt.Errorf("%w: write %s: %v", ErrStorage, dst, werr)
			}
			off += int64(k)
			mv.copied.Add(int64(k))
		}
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			out.Close()
			return copiedFile{}, fmt.Errorf("%w: read %s: %v", ErrStorage, src, rerr)
		}
		if k < n {
			limit = off // the file is shorter than it was: copy what is there
			break
		}
	}
	err = out.Truncate(limit)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return copiedFile{}, fmt.Errorf("%w: %s: %v", ErrStorage, dst, err)
	}
	return copiedFile{fi: fi, n: limit}, nil
}

// reloadLocked replaces the log's segments with those of dir, the moved
// copy of its files: the same offsets, producer state and epochs, read
// from the new files. The old segments' files are closed; the generation
// moves, so a cleaning planned on them is not swapped in.
func (l *Log) reloadLocked(dir string) error {
	nl, err := OpenLog(dir, *l.config(), LogOptions{
		FS: l.fs, Logger: l.logger, Now: l.now, Wall: l.wall, DeleteLater: l.deleteLater,
		Clean: true, RecoveryPoint: l.mu.logEndOffset,
		LogStartOffset: l.mu.logStartOffset, HighWatermark: l.published.highWatermark.Load(),
	})
	if err != nil {
		l.mu.failed = fmt.Errorf("%w: opening the moved log in %s: %v", ErrStorage, dir, err)
		return l.mu.failed
	}
	if nl.mu.logEndOffset != l.mu.logEndOffset {
		for _, s := range nl.mu.segments {
			s.close()
		}
		l.mu.failed = fmt.Errorf("%w: the moved log in %s ends at %d, not %d", ErrStorage, dir, nl.mu.logEndOffset, l.mu.logEndOffset)
		return l.mu.failed
	}
	for _, s := range l.mu.segments {
		_ = s.close() // the files are in the renamed old directory
	}
	l.mu.segments = nl.mu.segments
	l.mu.logStartOffset = nl.mu.logStartOffset
	l.mu.recoveryPoint = nl.mu.recoveryPoint
	l.mu.unflushed = 0
	l.mu.producers = nl.mu.producers
	l.mu.txns = nl.mu.txns
	l.mu.snapshotOffset = nl.mu.snapshotOffset
	l.mu.epochs = nl.mu.epochs
	l.mu.epochsDirty = nl.mu.epochsDirty
	l.published.highWatermark.Store(nl.published.highWatermark.Load())
	l.publishOffsetsLocked()
	l.mu.generation++
	l.dirPath.Store(&dir)
	return nil
}
