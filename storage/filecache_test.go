package storage

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/kbroker/kbroker/storage/logfs"
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
	for _, suffix := range []string{logfs.LogSuffix, logfs.IndexSuffix, logfs.TimeIndexSuffix, logfs.SnapshotSuffix + ".tmp"} {
		if strings.HasSuffix(f.name, suffix) {
			f.fs.segSyncs.Add(1)
		}
	}
	return f.File.Sync()
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
	if _, err := os.Stat(logfs.FileName(l.Dir(), 3, logfs.SnapshotSuffix)); err != nil {
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
