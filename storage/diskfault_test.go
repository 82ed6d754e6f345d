package storage

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/kbroker/kbroker/storage/logfs"
)

// dirFaults makes one operation ("write", "fsync" or "fallocate") fail
// with err on the files under dir once armed, as a failing or full disk
// does (a failed write stores half its bytes), and counts the operations
// that reach those files after the first fault.
type dirFaults struct {
	OSFS
	dir string
	op  string
	err error

	mu      sync.Mutex
	armed   bool
	faulted bool
	after   map[string]int
}

// hit reports whether op on name must fail now, and counts an operation
// after the fault.
func (f *dirFaults) hit(op, name string) bool {
	if !strings.HasPrefix(name, f.dir+string(filepath.Separator)) {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.faulted {
		f.after[op]++
		return false
	}
	if f.armed && op == f.op {
		f.faulted = true
		return true
	}
	return false
}

func (f *dirFaults) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	file, err := f.OSFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &dirFaultsFile{File: file, fs: f, name: name}, nil
}

type dirFaultsFile struct {
	File
	fs   *dirFaults
	name string
}

func (f *dirFaultsFile) WriteAt(p []byte, off int64) (int, error) {
	if f.fs.hit("write", f.name) {
		n, _ := f.File.WriteAt(p[:len(p)/2], off)
		return n, &os.PathError{Op: "write", Path: f.name, Err: f.fs.err}
	}
	return f.File.WriteAt(p, off)
}

func (f *dirFaultsFile) Sync() error {
	if f.fs.hit("fsync", f.name) {
		return &os.PathError{Op: "fsync", Path: f.name, Err: f.fs.err}
	}
	return f.File.Sync()
}

func (f *dirFaultsFile) Truncate(size int64) error {
	f.fs.hit("truncate", f.name)
	return f.File.Truncate(size)
}

func (f *dirFaultsFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.hit("read", f.name)
	return f.File.ReadAt(p, off)
}

func (f *dirFaultsFile) Allocate(size int64) error {
	if f.fs.hit("fallocate", f.name) {
		return &os.PathError{Op: "fallocate", Path: f.name, Err: f.fs.err}
	}
	return logfs.Allocate(f.File, size)
}

// TestDiskFaults: a failed write or fsync, or a full disk, on one
// partition takes its whole log directory offline at once: the append
// fails with a KAFKA_STORAGE_ERROR error, every other partition of the
// directory fails fast from then on (before TakeOfflineLogs closes them),
// nothing at all reaches its files again (no fsync is retried on the same
// data), the other directory goes on, and after a restart with the disk
// healthy every batch acknowledged under flush.messages=1 is there and no
// torn batch is served. As in Kafka the directory comes back only with a
// restart, not when space is freed.
func TestDiskFaults(t *testing.T) {
	for _, tc := range []struct {
		name, op    string
		err         error
		preallocate bool
	}{
		{"write fails with EIO", "write", syscall.EIO, false},
		{"fsync fails with EIO", "fsync", syscall.EIO, false},
		{"disk full on write", "write", syscall.ENOSPC, false},
		{"disk full on preallocating a rolled segment", "fallocate", syscall.ENOSPC, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dirs := []string{t.TempDir(), t.TempDir()}
			fsys := &dirFaults{dir: dirs[0], op: tc.op, err: tc.err, after: map[string]int{}}
			m, err := OpenManagerFS(fsys, dirs, nil)
			if err != nil {
				t.Fatal(err)
			}
			cfg := DefaultLogConfig()
			cfg.FlushMessages = 1 // fsync before the append returns (acknowledges)
			if tc.preallocate {   // the 4th batch rolls
				cfg.SegmentBytes = 3 * int64(len(makeBatch(plain(3))))
				cfg.Preallocate = true
			}
			logs := map[int32]*Log{}
			var failing, healthy []int32
			for p := int32(0); p < 4; p++ {
				l, err := m.GetOrCreate("t", p, cfg)
				if err != nil {
					t.Fatal(err)
				}
				for range 3 {
					mustAppend(t, l, plain(3))
				}
				logs[p] = l
				if filepath.Dir(l.Dir()) == dirs[0] {
					failing = append(failing, p)
				} else {
					healthy = append(healthy, p)
				}
			}
			acked := int64(9)

			fsys.mu.Lock()
			fsys.armed = true
			fsys.mu.Unlock()
			victim, other := logs[failing[0]], logs[failing[1]]
			_, err = victim.AppendAsLeader(makeBatch(plain(3)), AppendOptions{LogAppendTimeMs: -1})
			if !errors.Is(err, ErrStorage) || !strings.Contains(err.Error(), tc.err.Error()) {
				t.Fatalf("append on the faulty disk: %v, want ErrStorage and %v", err, tc.err)
			}
			select {
			case <-m.DirFailures():
			default:
				t.Fatal("DirFailures not signalled")
			}
			if got := m.OfflineDirs(); len(got) != 1 || got[0] != dirs[0] {
				t.Fatalf("offline dirs %v", got)
			}
			// Fail fast, before the owner takes the logs offline.
			if _, err := other.AppendAsLeader(makeBatch(plain(3)), AppendOptions{LogAppendTimeMs: -1}); !errors.Is(err, ErrLogDirOffline) {
				t.Fatalf("append to another partition of the failed dir: %v, want ErrLogDirOffline", err)
			}
			if _, err := other.Read(0, 1<<20, math.MaxInt64, true); !errors.Is(err, ErrStorage) {
				t.Fatalf("read of another partition of the failed dir: %v, want ErrStorage", err)
			}
			for _, l := range []*Log{victim, other} {
				if err := l.Flush(); !errors.Is(err, ErrStorage) {
					t.Fatalf("flush in the failed dir: %v", err)
				}
				if err := l.SyncTo(l.LogEndOffset() + 1); !errors.Is(err, ErrStorage) {
					t.Fatalf("SyncTo in the failed dir: %v", err)
				}
			}
			for _, p := range healthy {
				mustAppend(t, logs[p], plain(3))
			}
			if len(m.TakeOfflineLogs()) != 2 {
				t.Fatal("TakeOfflineLogs did not take the 2 logs of the failed dir")
			}
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			fsys.mu.Lock()
			after := fsys.after
			fsys.mu.Unlock()
			for _, op := range []string{"write", "fsync", "truncate", "fallocate", "read"} {
				if after[op] != 0 {
					t.Errorf("%d %s operations reached the failed dir after the fault (%v)", after[op], op, after)
				}
			}

			// Restart with the disk healthy (space freed).
			m2, err := OpenManager(dirs, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer m2.Close()
			for _, p := range failing {
				l, err := m2.GetOrCreate("t", p, cfg)
				if err != nil {
					t.Fatal(err)
				}
				leo := l.LogEndOffset()
				// Acknowledged batches are all there; the failed one may
				// be too when its bytes reached the disk (an fsync error
				// says nothing about which did).
				if leo != acked && (tc.op != "fsync" || p != failing[0] || leo != acked+3) {
					t.Fatalf("partition %d after restart: log end offset %d, want %d", p, leo, acked)
				}
				checkContiguous(t, l)
				mustAppend(t, l, plain(3))
				checkContiguous(t, l)
			}
		})
	}
}
