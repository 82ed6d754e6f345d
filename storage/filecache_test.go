package storage

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// openFDs counts this process's open descriptors, or -1 where /proc is
// missing.
func openFDs(t testing.TB) int {
	t.Helper()
	if runtime.GOOS != "linux" {
		return -1
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// Many logs of many segments each hold no more descriptors than the
// limit, through appends, rolls, reads and a restart, and read back the
// same bytes after their files were closed for room and reopened.
func TestFileCacheBoundsDescriptors(t *testing.T) {
	const (
		limit      = 16
		partitions = 40
		batches    = 30 // of ~300 bytes: about 10 segments of 1 KiB each
	)
	dir := t.TempDir()
	cfg := DefaultLogConfig()
	cfg.SegmentBytes = 1024
	cfg.IndexIntervalBytes = 1 // an index entry per batch: the index is read
	before := openFDs(t)
	m, err := OpenManagerFS(OSFS{}, []string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m.SetOpenFileLimit(limit)
	checkOpen := func(when string) {
		t.Helper()
		if open, _, _ := m.OpenFiles(); open > limit {
			t.Fatalf("%s: %d descriptors open, limit %d", when, open, limit)
		}
		if n := openFDs(t); before >= 0 && n-before > limit+2 { // +2: the log dir fsync, the runtime
			t.Fatalf("%s: the process holds %d more descriptors than before, limit %d", when, n-before, limit)
		}
	}
	logs := make([]*Log, partitions)
	for p := range partitions {
		if logs[p], err = m.GetOrCreate("t", int32(p), cfg); err != nil {
			t.Fatal(err)
		}
	}
	for i := range batches {
		for p, l := range logs {
			mustAppend(t, l, spec{n: 3, valueSize: 60 + p, pid: -1, epoch: -1, seq: -1, ts: testNow + int64(i)})
		}
		checkOpen(fmt.Sprintf("after append round %d", i))
	}
	if segs := len(logs[0].mu.segments); segs < 5 {
		t.Fatalf("only %d segments: the test wants many", segs)
	}
	want := make([][]byte, partitions)
	wantTS := make([]int64, partitions)
	for p, l := range logs {
		want[p] = logBytes(t, l)
		checkContiguous(t, l)
		off, _, ok, err := l.OffsetForTimestamp(testNow + 20)
		if err != nil || !ok {
			t.Fatalf("partition %d: OffsetForTimestamp: %v %v", p, ok, err)
		}
		wantTS[p] = off
	}
	checkOpen("after reading every log")
	// Read again, in another order: every file was closed for room since.
	for p := partitions - 1; p >= 0; p-- {
		if got := logBytes(t, logs[p]); !bytes.Equal(got, want[p]) {
			t.Fatalf("partition %d reads %d bytes after its files were reopened, %d before", p, len(got), len(want[p]))
		}
		// A lookup by timestamp reads the time index.
		if off, _, ok, err := logs[p].OffsetForTimestamp(testNow + 20); err != nil || !ok || off != wantTS[p] {
			t.Fatalf("partition %d: OffsetForTimestamp = %d %v %v, want %d", p, off, ok, err, wantTS[p])
		}
	}
	_, opens, evictions := m.OpenFiles()
	if evictions == 0 {
		t.Fatalf("no descriptor was closed for room (%d opens): the test proves nothing", opens)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if n := openFDs(t); before >= 0 && n > before+1 {
		t.Fatalf("%d descriptors left open after Close (%d before)", n-before, before)
	}

	m2, err := OpenManagerFS(OSFS{}, []string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	m2.SetOpenFileLimit(limit)
	m = m2
	for p := range partitions {
		l, err := m2.GetOrCreate("t", int32(p), cfg)
		if err != nil {
			t.Fatal(err)
		}
		checkOpen(fmt.Sprintf("after reopening partition %d", p))
		if got := logBytes(t, l); !bytes.Equal(got, want[p]) {
			t.Fatalf("partition %d reads %d bytes after the restart, %d before", p, len(got), len(want[p]))
		}
	}
}

// countingFS counts opens and fsyncs of the files below a cache, and
// the fsyncs of segment files and producer snapshots (segSyncs).
type countingFS struct {
	OSFS
	opens, syncs, segSyncs atomic.Int64
}

type countingFile struct {
	File
	fs   *countingFS
	name string
}

func (f *countingFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	file, err := f.OSFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	f.opens.Add(1)
	return countingFile{File: file, fs: f, name: name}, nil
}

func (f countingFile) Sync() error {
	f.fs.syncs.Add(1)
	for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix, snapshotSuffix + ".tmp"} {
		if strings.HasSuffix(f.name, suffix) {
			f.fs.segSyncs.Add(1)
		}
	}
	return f.File.Sync()
}

func newTestCache(t *testing.T, limit int) (*cacheFS, *countingFS) {
	t.Helper()
	under := &countingFS{}
	c := newFileCache(under)
	c.setLimit(limit)
	return &cacheFS{FS: under, c: c}, under
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
	if open, _, _ := fsys.c.stats(); open != 0 {
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
				if open, _, _ := fsys.c.stats(); open > limit+readers {
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

// BenchmarkCreateLog creates a new partition's log (directory, three
// files, directory fsync) in a Manager: the cost each replica of a
// CreateTopics adds on every broker hosting it.
func BenchmarkCreateLog(b *testing.B) {
	m, err := OpenManagerFS(OSFS{}, []string{b.TempDir()}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	cfg := DefaultLogConfig()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := m.GetOrCreate("t", int32(i), cfg); err != nil {
			b.Fatal(err)
		}
	}
}

// Closing a log that is durable and was not written since it was opened
// fsyncs nothing and writes no producer snapshot; one that was written
// does both. (A broker stopping with 10,000 idle partitions otherwise
// spends five fsyncs on each.)
func TestCloseOfIdleLogWritesNothing(t *testing.T) {
	dir := t.TempDir()
	under := &countingFS{}
	open := func() (*Manager, *Log) {
		t.Helper()
		m, err := OpenManagerFS(under, []string{dir}, nil)
		if err != nil {
			t.Fatal(err)
		}
		l, err := m.GetOrCreate("t", 0, DefaultLogConfig())
		if err != nil {
			t.Fatal(err)
		}
		return m, l
	}
	closeCounting := func(m *Manager) int64 {
		t.Helper()
		before := under.segSyncs.Load()
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		return under.segSyncs.Load() - before
	}

	m, l := open()
	mustAppend(t, l, plain(3))
	if n := closeCounting(m); n == 0 {
		t.Fatal("closing a written log fsynced nothing")
	}
	m, _ = open()
	if n := closeCounting(m); n != 0 {
		t.Fatalf("closing an idle, durable log fsynced %d segment or snapshot files", n)
	}
	// Still durable and whole, with its producer snapshot, after idle
	// restarts.
	m, l = open()
	defer m.Close()
	if l.LogEndOffset() != 3 {
		t.Fatalf("log end offset %d after idle restarts, want 3", l.LogEndOffset())
	}
	checkContiguous(t, l)
	if _, err := os.Stat(fileName(l.Dir(), 3, snapshotSuffix)); err != nil {
		t.Fatalf("producer snapshot at the log end offset: %v", err)
	}
}

// limitedFS fails opens with EMFILE while max files are open, as a
// process at its RLIMIT_NOFILE.
type limitedFS struct {
	OSFS
	max  int64
	open atomic.Int64
}

type limitedFile struct {
	File
	fs *limitedFS
}

func (f *limitedFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if f.open.Add(1) > f.max {
		f.open.Add(-1)
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EMFILE}
	}
	file, err := f.OSFS.OpenFile(name, flag, perm)
	if err != nil {
		f.open.Add(-1)
		return nil, err
	}
	return limitedFile{File: file, fs: f}, nil
}

func (f limitedFile) Close() error {
	f.fs.open.Add(-1)
	return f.File.Close()
}

// Out of descriptors with no limit set (the process's limit lowered
// below what the cache was told), opening a file closes idle ones to
// make room: every log opens and reads back, within the real limit.
func TestFileCacheGivesBackDescriptorsOnEMFILE(t *testing.T) {
	under := &limitedFS{max: 10}
	m, err := OpenManagerFS(under, []string{t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	const partitions = 20 // 60 segment files
	logs := make([]*Log, partitions)
	for p := range partitions {
		if logs[p], err = m.GetOrCreate("t", int32(p), DefaultLogConfig()); err != nil {
			t.Fatalf("partition %d: %v", p, err)
		}
		mustAppend(t, logs[p], plain(p+1))
	}
	for p, l := range logs {
		if got := len(readAll(t, l)); got != 1 || l.LogEndOffset() != int64(p+1) {
			t.Fatalf("partition %d: %d batches, log end offset %d", p, got, l.LogEndOffset())
		}
	}
	if n := under.open.Load(); n > under.max {
		t.Fatalf("%d files open, the limit is %d", n, under.max)
	}
	if _, _, evictions := m.OpenFiles(); evictions == 0 {
		t.Fatal("no descriptor was given back")
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
