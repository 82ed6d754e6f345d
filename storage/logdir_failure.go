package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Log directory failure (Kafka's LogDirFailureChannel and
// LogManager.handleLogDirFailure). Every file operation of the Manager and
// of its logs goes through logfs.WatchFS, which notes the directory of any
// I/O error that means the disk, not the request, is at fault. The first
// such error takes the whole directory offline, not only the log that hit
// it: a disk that failed one write is not trusted with the others. The
// Manager then:
//
//   - places no new partition there and refuses to open the ones it holds
//     (ErrLogDirOffline, a KAFKA_STORAGE_ERROR);
//   - signals DirFailures, so that the owner of the partitions
//     (replication) takes them offline and calls TakeOfflineLogs, which
//     closes their logs without writing to them;
//   - writes no checkpoint and no clean-shutdown marker there any more.
//   - fails every later read, write, truncation and fsync of its files at
//     once (logfs.WatchFS): its other logs stop before TakeOfflineLogs
//     closes them, and no fsync is retried on data whose fsync failed.
//
// Nothing brings a directory back while the process runs: as in Kafka, a
// restart with the directory healthy does (OpenManager fails only if a
// directory cannot be opened at all).
//
// Errors that say nothing about the disk do not count: a missing or
// existing file (callers expect those), EOF, a file closed under a
// reader, and running out of file descriptors (EMFILE, ENFILE), which is
// the process's state and clears when descriptors are freed (the replica
// stays offline on its own and is retried, replication offline.go).

// ErrLogDirOffline is the error of an operation on a partition whose log
// directory is offline; it wraps ErrStorage (KAFKA_STORAGE_ERROR).
var ErrLogDirOffline = fmt.Errorf("%w: log directory offline", ErrStorage)

// ErrLogDirNotFound: LOG_DIR_NOT_FOUND, a directory that is not one of
// log.dirs.
var ErrLogDirNotFound = errors.New("storage: log directory not found")

// dirFailure is why a log directory went offline.
type dirFailure struct{ err error }

// offline returns why d went offline, or nil.
func (d *logDir) offline() error {
	if f := d.failure.Load(); f != nil {
		return f.err
	}
	return nil
}

// diskError reports whether err, returned by a file operation, means the
// disk under it failed.
func diskError(err error) bool {
	switch {
	case err == nil,
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, os.ErrNotExist), errors.Is(err, os.ErrExist), errors.Is(err, os.ErrClosed),
		errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		return false
	}
	return true
}

// dirOf returns the log directory holding path, or nil. m.dirs does not
// change after OpenManager, so no lock is needed.
func (m *Manager) dirOf(path string) *logDir {
	path = filepath.Clean(path)
	for _, d := range m.dirs {
		if path == d.cleanPath || strings.HasPrefix(path, d.cleanPath+string(filepath.Separator)) {
			return d
		}
	}
	return nil
}

// noteIOError takes the directory of path offline if err is a disk error,
// and returns err unchanged. It takes no lock but atomics (it runs under
// Log.mu).
func (m *Manager) noteIOError(op, path string, err error) error {
	if !diskError(err) {
		return err
	}
	if d := m.dirOf(path); d != nil {
		m.failDir(d, fmt.Errorf("%s %s: %w", op, path, err))
	}
	return err
}

// failDir takes d offline, once.
func (m *Manager) failDir(d *logDir, err error) {
	if !d.failure.CompareAndSwap(nil, &dirFailure{err: err}) {
		return
	}
	m.offlineDirs.Add(1)
	m.logger.Error("log dir failed: taking it and every log in it offline", "dir", d.path, "err", err)
	select {
	case m.dirFailed <- struct{}{}:
	default:
	}
}

// DirFailures is signalled (coalesced) when a log directory goes offline.
func (m *Manager) DirFailures() <-chan struct{} { return m.dirFailed }

// OfflineDirs returns the offline log directories, in configuration order.
func (m *Manager) OfflineDirs() []string {
	var out []string
	for _, d := range m.dirs {
		if d.offline() != nil {
			out = append(out, d.path)
		}
	}
	return out
}

// OfflineDirCount is how many log directories are offline (a metric).
func (m *Manager) OfflineDirCount() int { return int(m.offlineDirs.Load()) }

// AllDirsOffline reports whether no log directory is left online: the
// broker cannot serve anything (Kafka shuts it down).
func (m *Manager) AllDirsOffline() bool { return int(m.offlineDirs.Load()) == len(m.dirs) }

// TakeOfflineLogs closes and forgets the open logs of offline directories
// and returns them. The logs are not flushed or checkpointed (their disk
// failed); a caller still holding one gets ErrLogDirOffline from it.
func (m *Manager) TakeOfflineLogs() []DirLog {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []DirLog
	for tp, l := range m.mu.logs {
		d := m.dirOfPartitionLocked(tp)
		if d == nil || d.offline() == nil {
			continue
		}
		delete(m.mu.logs, tp)
		l.abandon(fmt.Errorf("%w: %s: %v", ErrLogDirOffline, d.path, d.offline()))
		out = append(out, DirLog{Topic: tp.topic, Partition: tp.partition, Log: l})
	}
	return out
}

// dirOfPartitionLocked returns the directory holding tp's partition
// directory, or nil.
func (m *Manager) dirOfPartitionLocked(tp topicPartition) *logDir {
	for _, d := range m.dirs {
		if d.partitions[tp] {
			return d
		}
	}
	return nil
}

// abandon closes the log's files without writing anything (its disk
// failed): every later operation fails with cause.
func (l *Log) abandon(cause error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return
	}
	l.mu.closed = true
	if l.mu.failed != nil && !errors.Is(l.mu.failed, ErrLogDirOffline) {
		cause = fmt.Errorf("%w (the log had failed: %v)", cause, l.mu.failed)
	}
	l.mu.failed = cause
	for _, s := range l.mu.segments {
		_ = s.close() // the disk failed: errors are expected
	}
}

// Note is the Manager's logfs.Watcher: it takes the directory of path
// offline if err is a disk error (noteIOError).
func (w dirWatcher) Note(op, path string, err error) error { return w.m.noteIOError(op, path, err) }

// Gone makes every operation on a file of a directory that went offline
// fail fast with ErrLogDirOffline (logfs.WatchFS): the other logs of the
// directory stop writing at once, before TakeOfflineLogs closes them.
func (w dirWatcher) Gone(path string) func() error {
	d := w.m.dirOf(path)
	if d == nil {
		return nil
	}
	return func() error {
		if err := d.offline(); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrLogDirOffline, d.path, err)
		}
		return nil
	}
}

type dirWatcher struct{ m *Manager }

// closedErrLocked is the error of an operation on a closed log: why its
// log directory went offline for an abandoned one (KAFKA_STORAGE_ERROR,
// not a routine close).
func (l *Log) closedErrLocked() error {
	if errors.Is(l.mu.failed, ErrLogDirOffline) {
		return l.mu.failed
	}
	return ErrClosed
}
