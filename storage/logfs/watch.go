package logfs

import "os"

// Watcher is told of the file operations of a WatchFS (package storage's
// Manager: its log directory failure handling).
type Watcher interface {
	// Note is given every error of a file operation (op "open", "write",
	// "fsync", ...) on path and returns the error to report; it decides
	// whether the error means the disk failed.
	Note(op, path string, err error) error
	// Gone returns, for a file being opened at path, what tells later
	// whether its directory failed: nil while it stands, the error to
	// return otherwise. nil: the file is in no watched directory.
	Gone(path string) func() error
}

// WatchFS wraps fsys so that w notes every error, and so that no read,
// write, truncation, allocation or fsync reaches a file, and no fsync a
// directory, once w says the directory failed: the operation fails at
// once with w's error. After a failed write or fsync the disk's state is
// unknown (the page cache may hold pages the kernel will never write
// again, or already dropped them: PostgreSQL's "fsyncgate"), so nothing is
// retried on it and nothing is read from it that might not be on disk.
func WatchFS(fsys FS, w Watcher) FS { return watchFS{FS: fsys, w: w} }

type watchFS struct {
	FS
	w Watcher
}

func (f watchFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, f.w.Note("open", name, err)
	}
	return watchFile{File: file, name: name, w: f.w, gone: f.w.Gone(name)}, nil
}

func (f watchFS) Rename(o, n string) error    { return f.w.Note("rename", o, f.FS.Rename(o, n)) }
func (f watchFS) Remove(name string) error    { return f.w.Note("remove", name, f.FS.Remove(name)) }
func (f watchFS) RemoveAll(name string) error { return f.w.Note("remove", name, f.FS.RemoveAll(name)) }
func (f watchFS) MkdirAll(name string, perm os.FileMode) error {
	return f.w.Note("mkdir", name, f.FS.MkdirAll(name, perm))
}

func (f watchFS) ReadDir(name string) ([]os.DirEntry, error) {
	ents, err := f.FS.ReadDir(name)
	return ents, f.w.Note("readdir", name, err)
}

func (f watchFS) SyncDir(dir string) error {
	if gone := f.w.Gone(dir); gone != nil {
		if err := gone(); err != nil {
			return err
		}
	}
	return f.w.Note("fsync", dir, f.FS.SyncDir(dir))
}

type watchFile struct {
	File
	name string
	w    Watcher
	gone func() error
}

// refused is the error of an operation on a file of a failed directory.
func (f watchFile) refused() error {
	if f.gone == nil {
		return nil
	}
	return f.gone()
}

func (f watchFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.refused(); err != nil {
		return 0, err
	}
	n, err := f.File.ReadAt(p, off)
	return n, f.w.Note("read", f.name, err)
}

func (f watchFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.refused(); err != nil {
		return 0, err
	}
	n, err := f.File.WriteAt(p, off)
	return n, f.w.Note("write", f.name, err)
}

func (f watchFile) Truncate(size int64) error {
	if err := f.refused(); err != nil {
		return err
	}
	return f.w.Note("truncate", f.name, f.File.Truncate(size))
}

func (f watchFile) Sync() error {
	if err := f.refused(); err != nil {
		return err
	}
	return f.w.Note("fsync", f.name, f.File.Sync())
}

func (f watchFile) Stat() (os.FileInfo, error) {
	fi, err := f.File.Stat()
	return fi, f.w.Note("stat", f.name, err)
}

// WrittenSinceOpen forwards to the wrapped file; one that cannot tell
// counts as written.
func (f watchFile) WrittenSinceOpen() bool {
	w, ok := f.File.(WriteTracker)
	return !ok || w.WrittenSinceOpen()
}

// Allocate preallocates through the wrapped file (Allocate needs its
// descriptor).
func (f watchFile) Allocate(size int64) error {
	if err := f.refused(); err != nil {
		return err
	}
	return f.w.Note("fallocate", f.name, Allocate(f.File, size))
}
