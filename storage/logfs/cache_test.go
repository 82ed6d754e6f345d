package logfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

// countingFS counts opens and fsyncs of the files below a cache.
type countingFS struct {
	OSFS
	opens, syncs atomic.Int64
}

type countingFile struct {
	File
	fs *countingFS
}

func (f *countingFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	file, err := f.OSFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	f.opens.Add(1)
	return countingFile{File: file, fs: f}, nil
}

func (f countingFile) Sync() error {
	f.fs.syncs.Add(1)
	return f.File.Sync()
}

func newTestCache(t *testing.T, limit int) (*cacheFS, *countingFS) {
	t.Helper()
	under := &countingFS{}
	c := NewCache(under)
	c.SetLimit(limit)
	return c.FS().(*cacheFS), under
}

func mustOpen(t *testing.T, fsys FS, name string) File {
	t.Helper()
	f, err := fsys.OpenFile(name, os.O_RDWR|os.O_CREATE, FilePerm)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func mustWriteAt(t *testing.T, f File, s string) {
	t.Helper()
	if _, err := f.WriteAt([]byte(s), 0); err != nil {
		t.Fatal(err)
	}
}

func readString(f File) (string, error) {
	buf := make([]byte, 16)
	n, err := f.ReadAt(buf, 0)
	if n > 0 {
		err = nil
	}
	return string(buf[:n]), err
}

// A file closed for room reopens by its current name after it, or its
// directory, was renamed; one renamed over or removed keeps its
// descriptor until it is closed, as an unlinked open file does.
func TestFileCacheFollowsRenames(t *testing.T) {
	dir := t.TempDir()
	fsys, _ := newTestCache(t, 1)
	mkdir := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.Mkdir(p, DirPerm); err != nil {
			t.Fatal(err)
		}
		return p
	}
	check := func(f File, want string) {
		t.Helper()
		if got, err := readString(f); err != nil || got != want {
			t.Fatalf("read %q, %v; want %q", got, err, want)
		}
	}

	// A file renamed while closed for room.
	a := mustOpen(t, fsys, filepath.Join(dir, "a"))
	mustWriteAt(t, a, "A")
	b := mustOpen(t, fsys, filepath.Join(dir, "b")) // evicts a
	mustWriteAt(t, b, "B")
	if err := fsys.Rename(filepath.Join(dir, "a"), filepath.Join(dir, "a2")); err != nil {
		t.Fatal(err)
	}
	check(a, "A")
	check(b, "B")

	// A directory renamed, as a deleted partition's or a moved one's.
	p := mkdir("p-0")
	x := mustOpen(t, fsys, filepath.Join(p, "x"))
	mustWriteAt(t, x, "X")
	check(a, "A") // evicts x
	if err := fsys.Rename(p, filepath.Join(dir, "p-0.1-delete")); err != nil {
		t.Fatal(err)
	}
	check(x, "X")

	// Renamed over (a cleaner swap): the old file keeps its descriptor,
	// beyond the limit, and still reads the old bytes; the new one reads
	// under the name.
	old := mustOpen(t, fsys, filepath.Join(dir, "seg"))
	mustWriteAt(t, old, "OLD")
	repl := mustOpen(t, fsys, filepath.Join(dir, "seg.swap"))
	mustWriteAt(t, repl, "NEW")
	check(old, "OLD") // open at the rename, as a segment being swapped out
	if err := fsys.Rename(filepath.Join(dir, "seg.swap"), filepath.Join(dir, "seg")); err != nil {
		t.Fatal(err)
	}
	check(a, "A")
	check(b, "B")
	check(old, "OLD")
	check(repl, "NEW")
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	// Removed while closed for room: it cannot come back.
	if err := fsys.Remove(filepath.Join(dir, "b")); err != nil {
		t.Fatal(err)
	}
	check(a, "A") // b was evicted before its removal
	if _, err := readString(b); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("read of a removed file closed for room: %v, want ErrNotExist", err)
	}
	for _, f := range []File{a, b, x, repl} {
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if open, _, _ := fsys.c.Stats(); open != 0 {
		t.Fatalf("%d descriptors open after every file was closed", open)
	}
}

// Sync fsyncs what was written through the file since its last fsync,
// reopening it if needed, and skips a file with nothing new (no reopen).
func TestFileCacheSyncSkipsUnwrittenFiles(t *testing.T) {
	dir := t.TempDir()
	fsys, under := newTestCache(t, 1)
	f := mustOpen(t, fsys, filepath.Join(dir, "f"))
	g := mustOpen(t, fsys, filepath.Join(dir, "g")) // evicts f
	if err := f.Sync(); err != nil {                // never synced: done
		t.Fatal(err)
	}
	if got := under.syncs.Load(); got != 1 {
		t.Fatalf("%d fsyncs, want 1", got)
	}
	mustWriteAt(t, g, "G") // evicts f
	opens := under.opens.Load()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if under.syncs.Load() != 1 || under.opens.Load() != opens {
		t.Fatalf("a synced, unwritten file was fsynced again (%d) or reopened (%d opens, %d before)",
			under.syncs.Load(), under.opens.Load(), opens)
	}
	if err := g.Sync(); err != nil { // written, then evicted by nothing
		t.Fatal(err)
	}
	mustWriteAt(t, f, "F") // evicts g
	for _, h := range []File{f, g} {
		if err := h.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if got := under.syncs.Load(); got != 3 {
		t.Fatalf("%d fsyncs, want 3 (f, g, f after its write)", got)
	}
	for _, h := range []File{f, g} {
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// Concurrent readers of more files than the limit each read their own
// bytes, and the descriptors never pass the limit by more than the calls
// in flight (pinned descriptors are not closed).
func TestFileCacheConcurrentReads(t *testing.T) {
	const limit, files, readers = 4, 32, 8
	dir := t.TempDir()
	fsys, _ := newTestCache(t, limit)
	fs := make([]File, files)
	for i := range fs {
		fs[i] = mustOpen(t, fsys, filepath.Join(dir, fmt.Sprint(i)))
		mustWriteAt(t, fs[i], fmt.Sprint(i))
	}
	var wg sync.WaitGroup
	var failed atomic.Value
	for r := range readers {
		wg.Go(func() {
			for k := range 500 {
				i := (r*7 + k*13) % files
				got, err := readString(fs[i])
				if err != nil || got != fmt.Sprint(i) {
					failed.Store(fmt.Sprintf("file %d read %q, %v", i, got, err))
					return
				}
				if open, _, _ := fsys.c.Stats(); open > limit+readers {
					failed.Store(fmt.Sprintf("%d descriptors open, limit %d + %d readers", open, limit, readers))
					return
				}
			}
		})
	}
	wg.Wait()
	if msg := failed.Load(); msg != nil {
		t.Fatal(msg)
	}
	for _, f := range fs {
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLRUList(t *testing.T) {
	var l lruList
	a, b, c := &cachedFile{name: "a"}, &cachedFile{name: "b"}, &cachedFile{name: "c"}
	order := func() string {
		var s string
		for cf := l.front; cf != nil; cf = cf.next {
			s += cf.name
		}
		var r string
		for cf := l.back; cf != nil; cf = cf.prev {
			r = cf.name + r
		}
		if s != r {
			t.Fatalf("forward %q, backward %q", s, r)
		}
		if len(s) != l.n {
			t.Fatalf("n = %d for %q", l.n, s)
		}
		return s
	}
	l.pushFront(a)
	l.pushFront(b)
	l.pushFront(c)
	for _, step := range []struct {
		do   func()
		want string
	}{
		{func() {}, "cba"},
		{func() { l.remove(b) }, "ca"}, // middle
		{func() { l.remove(a) }, "c"},  // back
		{func() { l.pushFront(a); l.pushFront(b) }, "bac"},
		{func() { l.remove(b) }, "ac"},            // front
		{func() { l.remove(a); l.remove(c) }, ""}, // empty again
	} {
		step.do()
		if got := order(); got != step.want {
			t.Fatalf("list %q, want %q", got, step.want)
		}
	}
	if a.inLRU || b.inLRU || c.inLRU || l.front != nil || l.back != nil {
		t.Fatal("removed files still linked")
	}
}
