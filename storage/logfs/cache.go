package logfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// The Manager's open files are a bounded cache of descriptors, as
// PostgreSQL's virtual file descriptors (fd.c): every file the logs open
// through the Manager's FS is a cachedFile that holds a real descriptor
// only while it is among the most recently used, and reopens its file by
// name when it is used after having been closed for room.
//
// Without it a log holds three descriptors per segment (.log, .index,
// .timeindex) for its whole life, so descriptors grow with partitions ×
// segments: 10,000 partition replicas with one segment each need 30,000,
// past a common RLIMIT_NOFILE (and 20,000 here), and idle partitions hold
// them for nothing. With the cache the logs use at most the limit given
// to SetLimit (storage's Manager.SetOpenFileLimit), whatever their
// number; a busy partition keeps its descriptors, an idle one gives them
// back.
//
// What a descriptor gave for free the cache keeps:
//
//   - Positions: the log does all its I/O positionally (ReadAt, WriteAt,
//     Truncate), so a reopened descriptor needs no seek.
//   - Renames: a descriptor follows its file when the file or its
//     directory is renamed (retention's .deleted, the cleaner's .cleaned →
//     .swap → final names, a partition directory renamed -delete or moved
//     into place). Rename, Remove and RemoveAll go through the cache,
//     which renames the cachedFiles of that path (or of the files directly
//     in that directory: partition directories hold no subdirectories).
//   - Unlinked files: a file removed or renamed over while a cachedFile
//     still refers to it cannot be reopened by name; such a "detached"
//     file keeps its descriptor until it is closed, never evicted, and one
//     already closed answers os.ErrNotExist. The log closes segments
//     before it removes or replaces their files, so this is only the
//     moment between the two.
//   - Durability: closing a descriptor does not write anything back, and
//     a reopened file created is never truncated or recreated (O_CREATE,
//     O_TRUNC and O_EXCL apply at the first open only). An fsync through
//     a later descriptor flushes the same inode's dirty pages, and Linux
//     (4.16 on) reports a writeback error not yet seen by anyone to the
//     next fsync through any descriptor, so an error of a write made
//     through an evicted descriptor is not lost by the eviction.
//     Sync skips the fsync (and the reopen) when nothing was written
//     through the file since its last successful fsync: closing 10,000
//     idle logs then reopens nothing. The log writes and syncs a file
//     through the same cachedFile, which is what makes that sound.
//
// A process out of descriptors (EMFILE: a limit lowered at run time, a
// burst of connections) gets idle log files closed to make room for the
// one being opened, rather than a partition going offline.
//
// A descriptor in use (pinned for the duration of one call) is never
// closed; when every one is pinned the cache goes over its limit until
// calls end. The cache's lock is never held during a file system call.

// Cache is the descriptor cache of one Manager. Lock order: any of the
// caller's locks before Cache.mu; nothing is locked under it. No method
// holds it during a file system call.
type Cache struct {
	fs FS // where files are opened

	mu sync.Mutex
	// reopened is signalled (on mu) when a reopen ends.
	reopened sync.Cond
	// limit is how many descriptors may be open at once; <= 0 is no
	// limit (nothing is ever closed for room).
	limit int
	open  int // descriptors open, pinned or not
	// lru holds the open, unpinned, attached files, most recently used at
	// the front: the back is closed first.
	lru lruList
	// byDir indexes attached files by their directory, to rename them
	// with their file or directory.
	byDir map[string]map[*cachedFile]struct{}
	// stats, for tests and metrics
	opens, evictions int64
}

// NewCache returns a cache without a limit over the files of fsys.
func NewCache(fsys FS) *Cache {
	c := &Cache{fs: fsys, byDir: map[string]map[*cachedFile]struct{}{}}
	c.reopened.L = &c.mu
	return c
}

// FS returns the file system whose files are the cache's: opened through
// it, and renamed and removed through it so that a closed descriptor
// reopens the right file. Its other calls go to the file system under the
// cache.
func (c *Cache) FS() FS { return &cacheFS{FS: c.fs, c: c} }

// cachedFile is a File whose descriptor the cache may close while it is
// not in use. Its fields are guarded by the cache's mu.
type cachedFile struct {
	c    *Cache
	name string // the path it reopens; "" once detached
	flag int    // os.OpenFile flags for a reopen
	perm os.FileMode

	f    File // nil while closed for room (or once detached and closed)
	pins int
	// prev and next link it into c.lru while it is open, unpinned and
	// attached (inLRU).
	prev, next *cachedFile
	inLRU      bool
	closed     bool // Close was called
	opening    bool // a reopen is under way (without the lock)
	detached   bool // removed or renamed over: cannot be reopened
	// gen counts writes; synced says an fsync succeeded after the last.
	gen    uint64
	synced bool
}

var _ FS = (*cacheFS)(nil)

// cacheFS is the FS of a Manager: its files are cachedFiles.
type cacheFS struct {
	FS
	c *Cache
}

func (fsys *cacheFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	c := fsys.c
	f, err := c.openFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	cf := &cachedFile{c: c, name: filepath.Clean(name), perm: perm, f: f,
		flag: flag &^ (os.O_CREATE | os.O_TRUNC | os.O_EXCL)}
	if flag&(os.O_CREATE|os.O_TRUNC) != 0 {
		cf.gen = 1 // created or emptied: a change like a write
	}
	c.mu.Lock()
	c.opens++
	c.open++
	c.attachLocked(cf)
	c.lru.pushFront(cf)
	evicted := c.evictLocked()
	c.mu.Unlock()
	closeAll(evicted)
	return cf, nil
}

func (fsys *cacheFS) Rename(oldpath, newpath string) error {
	if err := fsys.FS.Rename(oldpath, newpath); err != nil {
		return err
	}
	c := fsys.c
	c.mu.Lock()
	defer c.mu.Unlock()
	oldpath, newpath = filepath.Clean(oldpath), filepath.Clean(newpath)
	c.detachNamedLocked(newpath) // renamed over: the old file is unlinked
	for _, cf := range c.namedLocked(oldpath) {
		c.moveLocked(cf, newpath)
	}
	// A directory: its files follow it.
	for cf := range c.byDir[oldpath] {
		c.moveLocked(cf, filepath.Join(newpath, filepath.Base(cf.name)))
	}
	return nil
}

func (fsys *cacheFS) Remove(name string) error {
	if err := fsys.FS.Remove(name); err != nil {
		return err
	}
	c := fsys.c
	c.mu.Lock()
	defer c.mu.Unlock()
	c.detachNamedLocked(filepath.Clean(name))
	return nil
}

func (fsys *cacheFS) RemoveAll(name string) error {
	err := fsys.FS.RemoveAll(name)
	c := fsys.c
	c.mu.Lock()
	defer c.mu.Unlock()
	// Detach even on an error: RemoveAll may have removed part of it.
	name = filepath.Clean(name)
	c.detachNamedLocked(name)
	for cf := range c.byDir[name] {
		c.detachLocked(cf)
	}
	return err
}

func (c *Cache) attachLocked(cf *cachedFile) {
	dir := filepath.Dir(cf.name)
	m := c.byDir[dir]
	if m == nil {
		m = map[*cachedFile]struct{}{}
		c.byDir[dir] = m
	}
	m[cf] = struct{}{}
}

func (c *Cache) unindexLocked(cf *cachedFile) {
	dir := filepath.Dir(cf.name)
	if m := c.byDir[dir]; m != nil {
		delete(m, cf)
		if len(m) == 0 {
			delete(c.byDir, dir)
		}
	}
}

// namedLocked returns the attached files of path.
func (c *Cache) namedLocked(path string) []*cachedFile {
	var out []*cachedFile
	for cf := range c.byDir[filepath.Dir(path)] {
		if cf.name == path {
			out = append(out, cf)
		}
	}
	return out
}

func (c *Cache) moveLocked(cf *cachedFile, name string) {
	c.unindexLocked(cf)
	cf.name = name
	c.attachLocked(cf)
}

func (c *Cache) detachNamedLocked(path string) {
	for _, cf := range c.namedLocked(path) {
		c.detachLocked(cf)
	}
}

// detachLocked makes cf unreopenable: its descriptor, if open, is kept
// until Close, since it is the only way left to the file.
func (c *Cache) detachLocked(cf *cachedFile) {
	c.unindexLocked(cf)
	cf.detached, cf.name = true, ""
	if cf.inLRU {
		c.lru.remove(cf)
	}
}

// evictLocked takes least recently used descriptors out of the cache
// while more than the limit are open, for the caller to close once it
// has released the lock.
func (c *Cache) evictLocked() []File {
	var out []File
	for c.limit > 0 && c.open > c.limit && c.lru.n > 0 {
		cf := c.lru.back
		c.lru.remove(cf)
		out = append(out, cf.f)
		cf.f = nil
		c.open--
		c.evictions++
	}
	return out
}

// openFile opens name below the cache. When the process is out of
// descriptors (EMFILE, ENFILE: the limit lowered at run time, a burst of
// sockets) it gives back an eighth of its idle ones, at least one, and
// tries again while it has any: idle log files make room for the file in
// use, as PostgreSQL's fd.c does, instead of the partition going offline.
func (c *Cache) openFile(name string, flag int, perm os.FileMode) (File, error) {
	for {
		f, err := c.fs.OpenFile(name, flag, perm)
		if err == nil || !errors.Is(err, syscall.EMFILE) && !errors.Is(err, syscall.ENFILE) {
			return f, err
		}
		c.mu.Lock()
		var freed []File
		for n := max(c.open/8, 1); n > 0 && c.lru.n > 0; n-- {
			cf := c.lru.back
			c.lru.remove(cf)
			freed = append(freed, cf.f)
			cf.f = nil
			c.open--
			c.evictions++
		}
		c.mu.Unlock()
		if len(freed) == 0 {
			return nil, err
		}
		closeAll(freed)
	}
}

// closeAll closes descriptors taken out of the cache. A close error of a
// file only read or written positionally says nothing that the next
// fsync (which reports writeback errors) will not.
func closeAll(fs []File) {
	for _, f := range fs {
		_ = f.Close()
	}
}

// acquire pins cf's descriptor, reopening it if it was closed for room.
// write marks the file as changed since its last fsync. The reopen runs
// without the lock (a slow disk must not stall every log); one reopen of
// a file runs at a time, and one that raced a rename of the file is done
// again under the new name.
func (c *Cache) acquire(cf *cachedFile, write bool) (File, error) {
	c.mu.Lock()
	for {
		switch {
		case cf.closed:
			c.mu.Unlock()
			return nil, os.ErrClosed
		case cf.f != nil:
			if cf.inLRU {
				c.lru.remove(cf)
			}
			if write {
				cf.gen++
				cf.synced = false
			}
			cf.pins++
			f := cf.f
			c.mu.Unlock()
			return f, nil
		case cf.detached:
			c.mu.Unlock()
			return nil, fmt.Errorf("reopen of a removed file: %w", os.ErrNotExist)
		case cf.opening:
			c.reopened.Wait()
			continue
		}
		cf.opening = true
		name := cf.name
		c.mu.Unlock()
		f, err := c.openFile(name, cf.flag, cf.perm)
		c.mu.Lock()
		cf.opening = false
		c.reopened.Broadcast()
		if err == nil && (cf.closed || cf.detached || cf.name != name) {
			// Renamed, removed or closed while it opened: which file
			// it got is unknown. Look again.
			c.mu.Unlock()
			_ = f.Close()
			c.mu.Lock()
			continue
		}
		if err != nil {
			c.mu.Unlock()
			return nil, err
		}
		c.opens++
		cf.f = f
		c.open++
		// cf is not in the LRU: never evicted here.
		evicted := c.evictLocked()
		c.mu.Unlock()
		closeAll(evicted)
		c.mu.Lock()
	}
}

// release unpins cf, closing its descriptor if Close came meanwhile.
func (c *Cache) release(cf *cachedFile) {
	c.mu.Lock()
	cf.pins--
	var toClose []File
	if cf.pins == 0 && cf.f != nil {
		switch {
		case cf.closed:
			toClose = append(toClose, cf.f) // Close already returned; the caller raced it
			cf.f = nil
			c.open--
		case !cf.detached:
			c.lru.pushFront(cf)
		}
	}
	toClose = append(toClose, c.evictLocked()...)
	c.mu.Unlock()
	closeAll(toClose)
}

// SetLimit sets the descriptor limit (<= 0: none), closing descriptors
// now if more are open. It may block on those closes.
func (c *Cache) SetLimit(n int) {
	c.mu.Lock()
	c.limit = n
	evicted := c.evictLocked()
	c.mu.Unlock()
	closeAll(evicted)
}

// Stats reports the descriptors open now, and how many times a file was
// opened and a descriptor closed for room since the cache was made.
func (c *Cache) Stats() (open int, opens, evictions int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.open, c.opens, c.evictions
}

func (cf *cachedFile) ReadAt(p []byte, off int64) (int, error) {
	f, err := cf.c.acquire(cf, false)
	if err != nil {
		return 0, err
	}
	defer cf.c.release(cf)
	return f.ReadAt(p, off)
}

func (cf *cachedFile) WriteAt(p []byte, off int64) (int, error) {
	f, err := cf.c.acquire(cf, true)
	if err != nil {
		return 0, err
	}
	defer cf.c.release(cf)
	return f.WriteAt(p, off)
}

func (cf *cachedFile) Truncate(size int64) error {
	f, err := cf.c.acquire(cf, true)
	if err != nil {
		return err
	}
	defer cf.c.release(cf)
	return f.Truncate(size)
}

func (cf *cachedFile) Stat() (os.FileInfo, error) {
	f, err := cf.c.acquire(cf, false)
	if err != nil {
		return nil, err
	}
	defer cf.c.release(cf)
	return f.Stat()
}

// Allocate preallocates through the real descriptor (allocate_linux.go
// needs it).
func (cf *cachedFile) Allocate(size int64) error {
	f, err := cf.c.acquire(cf, true)
	if err != nil {
		return err
	}
	defer cf.c.release(cf)
	return Allocate(f, size)
}

// Sync fsyncs the file unless nothing was written through it since its
// last successful fsync.
func (cf *cachedFile) Sync() error {
	c := cf.c
	c.mu.Lock()
	if cf.closed {
		c.mu.Unlock()
		return os.ErrClosed
	}
	if cf.synced {
		c.mu.Unlock()
		return nil
	}
	gen := cf.gen
	c.mu.Unlock()
	f, err := c.acquire(cf, false)
	if err != nil {
		return err
	}
	err = f.Sync()
	c.release(cf)
	if err == nil {
		c.mu.Lock()
		cf.synced = cf.gen == gen
		c.mu.Unlock()
	}
	return err
}

// WriteTracker is a file that knows whether anything was written through
// it since it was opened (Log.Close skips the fsync of a durable log
// that was not written). The cache's files are WriteTrackers.
type WriteTracker interface{ WrittenSinceOpen() bool }

func (cf *cachedFile) WrittenSinceOpen() bool {
	cf.c.mu.Lock()
	defer cf.c.mu.Unlock()
	return cf.gen > 0
}

func (cf *cachedFile) Close() error {
	c := cf.c
	c.mu.Lock()
	if cf.closed {
		c.mu.Unlock()
		return os.ErrClosed
	}
	cf.closed = true
	if !cf.detached {
		c.unindexLocked(cf)
	}
	if cf.inLRU {
		c.lru.remove(cf)
	}
	if cf.f == nil || cf.pins > 0 {
		c.mu.Unlock()
		return nil // closed for room, or the last release closes it
	}
	f := cf.f
	cf.f = nil
	c.open--
	c.mu.Unlock()
	return f.Close()
}

// lruList is an intrusive doubly linked list of cachedFiles, the most
// recently used at the front: pinning and unpinning a file on every read
// and write then allocates nothing (container/list allocated an element
// per unpin). The zero value is empty; guarded by Cache.mu.
type lruList struct {
	front, back *cachedFile
	n           int
}

func (l *lruList) pushFront(cf *cachedFile) {
	cf.prev, cf.next, cf.inLRU = nil, l.front, true
	if l.front != nil {
		l.front.prev = cf
	} else {
		l.back = cf
	}
	l.front = cf
	l.n++
}

func (l *lruList) remove(cf *cachedFile) {
	if cf.prev != nil {
		cf.prev.next = cf.next
	} else {
		l.front = cf.next
	}
	if cf.next != nil {
		cf.next.prev = cf.prev
	} else {
		l.back = cf.prev
	}
	cf.prev, cf.next, cf.inLRU = nil, nil, false
	l.n--
}
