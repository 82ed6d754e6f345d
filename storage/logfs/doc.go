// Package logfs is the file system under the partition logs: the File and
// FS interfaces the logs do all their I/O through, OSFS (the os package),
// the names of segment files (FileName, ParseFileName and the suffixes,
// Kafka's LogFileUtils), atomic small-file writes for checkpoints
// (WriteFileAtomic), preallocation (Allocate), and the Manager's bounded
// cache of descriptors (Cache).
//
// Package storage owns what the files hold and when they are written; this
// package owns only how they are named, opened and held. It must never
// import storage or any other kbroker package: the standard library only.
//
// # Contract with storage
//
// Every File is used positionally (ReadAt, WriteAt, Truncate), so a
// reopened descriptor needs no seek. A Cache's files are opened, renamed
// and removed through Cache.FS, so that a descriptor closed for room
// reopens the file under its current name. Cache.mu is a leaf: callers may
// hold any of their locks (the Log's, the Manager's) when they call into
// the cache, and it never calls back into them nor holds its lock during a
// file system call. A call on a cached file may block on the disk (its
// reopen, the close of an evicted descriptor) and waits for a reopen of
// the same file already under way; never for another file's I/O.
package logfs
