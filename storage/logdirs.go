package storage

import (
	"cmp"
	"path/filepath"
	"slices"
	"strings"
)

// What DescribeLogDirs shows of the log directories: which partitions
// each holds, how large their logs are, and whether a log failed.

// LogDirLogs is one log directory and the open logs it holds.
type LogDirLogs struct {
	Path string
	// Offline is why the directory went offline (logdir_failure.go), nil
	// while it is online.
	Offline error
	Logs    []DirLog // sorted by topic, then partition
	// Futures are the logs being moved into this directory
	// (AlterReplicaLogDirs, move.go).
	Futures []FutureLog // sorted like Logs
}

// FutureLog is a log being copied into a directory by MoveLog.
type FutureLog struct {
	Topic     string
	Partition int32
	// Size is the bytes copied so far; EndOffset is the offset below
	// which everything is copied.
	Size, EndOffset int64
}

// DirLog is an open partition log in a LogDirLogs.
type DirLog struct {
	Topic     string
	Partition int32
	Log       *Log
}

// LogDirs returns every log directory, in configuration order, with the
// open logs it holds.
func (m *Manager) LogDirs() []LogDirLogs {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]LogDirLogs, len(m.dirs))
	byPath := make(map[string]int, len(m.dirs))
	for i, d := range m.dirs {
		out[i].Path = d.path
		out[i].Offline = d.offline()
		byPath[filepath.Clean(d.path)] = i
	}
	for tp, mv := range m.mu.moving {
		i := byPath[mv.to.cleanPath]
		out[i].Futures = append(out[i].Futures, FutureLog{Topic: tp.topic, Partition: tp.partition,
			Size: mv.copied.Load(), EndOffset: mv.endOffset.Load()})
	}
	for tp, l := range m.mu.logs {
		i, ok := byPath[filepath.Dir(filepath.Clean(l.Dir()))]
		if !ok {
			continue
		}
		out[i].Logs = append(out[i].Logs, DirLog{Topic: tp.topic, Partition: tp.partition, Log: l})
	}
	for i := range out {
		slices.SortFunc(out[i].Futures, func(a, b FutureLog) int {
			return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
		})
		slices.SortFunc(out[i].Logs, func(a, b DirLog) int {
			if c := strings.Compare(a.Topic, b.Topic); c != 0 {
				return c
			}
			return cmp.Compare(a.Partition, b.Partition)
		})
	}
	return out
}

// Size returns the bytes of the log's segments (the .log files, as
// Kafka's Log.size).
func (l *Log) Size() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var n int64
	for _, s := range l.mu.segments {
		n += s.size
	}
	return n
}

// Failed returns the error that left the log unwritable (a failed write
// that could not be undone), or nil.
func (l *Log) Failed() error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.mu.failed
}
