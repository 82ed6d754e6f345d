package storage

import "github.com/kbroker/kbroker/storage/logfs"

// The file system under the logs, and the Manager's bounded cache of
// descriptors over it, are package logfs's; these names keep storage's
// API.
type (
	// File is the part of *os.File the log uses (logfs.File).
	File = logfs.File
	// FS is the filesystem under the logs (logfs.FS).
	FS = logfs.FS
	// OSFS is FS backed by the os package (logfs.OSFS).
	OSFS = logfs.OSFS
)

// Permissions of what the log creates (logfs.FilePerm, logfs.DirPerm).
const (
	FilePerm = logfs.FilePerm
	DirPerm  = logfs.DirPerm
)

// SetOpenFileLimit bounds the file descriptors the Manager's logs hold at
// once (segment files, indexes, snapshots and checkpoints being written):
// past it the least recently used are closed and reopened when next used.
// n <= 0 removes the bound. The broker gives it what RLIMIT_NOFILE leaves
// after its sockets (cluster/capacity.go).
func (m *Manager) SetOpenFileLimit(n int) { m.files.SetLimit(n) }

// OpenFiles reports the descriptors the Manager's logs hold now, and how
// many times a file was opened and a descriptor closed for room since
// the Manager opened (metrics: a high eviction rate means the limit is
// below the working set).
func (m *Manager) OpenFiles() (open int, opens, evictions int64) { return m.files.Stats() }
