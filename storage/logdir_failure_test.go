package storage

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
)

// dirFaultFS fails writes and fsyncs of files under one directory with
// EIO while failing is set, as a dying disk does.
type dirFaultFS struct {
	OSFS
	dir     string
	failing atomic.Bool
}

func (f *dirFaultFS) under(name string) bool {
	return f.failing.Load() && strings.HasPrefix(filepath.Clean(name), filepath.Clean(f.dir)+string(filepath.Separator))
}

func (f *dirFaultFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	file, err := f.OSFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &dirFaultFile{File: file, fs: f, name: name}, nil
}

type dirFaultFile struct {
	File
	fs   *dirFaultFS
	name string
}

func (f *dirFaultFile) WriteAt(p []byte, off int64) (int, error) {
	if f.fs.under(f.name) {
		return 0, &os.PathError{Op: "write", Path: f.name, Err: syscall.EIO}
	}
	return f.File.WriteAt(p, off)
}

func (f *dirFaultFile) Sync() error {
	if f.fs.under(f.name) {
		return &os.PathError{Op: "fsync", Path: f.name, Err: syscall.EIO}
	}
	return f.File.Sync()
}

// TestLogDirFailure: an I/O error on one log of a directory takes the
// whole directory offline (its other logs too), new partitions go to the
// other directory, the directory's partitions refuse to open, its logs
// are closed by TakeOfflineLogs, and a restart with the disk healthy
// brings everything back.
func TestLogDirFailure(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	fsys := &dirFaultFS{dir: dirs[0]}
	m, err := OpenManagerFS(fsys, dirs, nil)
	if err != nil {
		t.Fatal(err)
	}
	logs := map[int32]*Log{}
	for p := int32(0); p < 4; p++ {
		l, err := m.GetOrCreate("t", p, DefaultLogConfig())
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, l, plain(3))
		logs[p] = l
	}
	var failing, healthy []int32
	for p, l := range logs {
		if filepath.Dir(l.Dir()) == dirs[0] {
			failing = append(failing, p)
		} else {
			healthy = append(healthy, p)
		}
	}
	if len(failing) != 2 || len(healthy) != 2 {
		t.Fatalf("placement: %v in %s, %v in %s", failing, dirs[0], healthy, dirs[1])
	}

	fsys.failing.Store(true)
	if _, err := logs[failing[0]].AppendAsLeader(makeBatch(plain(1)), AppendOptions{LogAppendTimeMs: -1}); !errors.Is(err, ErrStorage) {
		t.Fatalf("append on the failing disk: %v, want ErrStorage", err)
	}
	select {
	case <-m.DirFailures():
	default:
		t.Fatal("DirFailures not signalled")
	}
	if got := m.OfflineDirs(); len(got) != 1 || got[0] != dirs[0] {
		t.Fatalf("offline dirs %v, want [%s]", got, dirs[0])
	}
	if m.OfflineDirCount() != 1 || m.AllDirsOffline() {
		t.Fatalf("offline count %d, all %v", m.OfflineDirCount(), m.AllDirsOffline())
	}
	ld := m.LogDirs()
	if ld[0].Offline == nil || ld[1].Offline != nil {
		t.Fatalf("LogDirs offline: %v, %v", ld[0].Offline, ld[1].Offline)
	}

	taken := m.TakeOfflineLogs()
	if len(taken) != 2 {
		t.Fatalf("TakeOfflineLogs took %d logs, want the 2 of the failed dir", len(taken))
	}
	for _, dl := range taken {
		if filepath.Dir(dl.Log.Dir()) != dirs[0] {
			t.Fatalf("took %s, not in the failed dir", dl.Log.Dir())
		}
		// Every log of the directory is offline, not only the one that failed.
		if _, err := dl.Log.Read(0, 1<<20, 3, true); !errors.Is(err, ErrLogDirOffline) && !errors.Is(err, ErrClosed) {
			t.Fatalf("read of an offline log: %v", err)
		}
		if _, err := dl.Log.AppendAsLeader(makeBatch(plain(1)), AppendOptions{LogAppendTimeMs: -1}); !errors.Is(err, ErrLogDirOffline) {
			t.Fatalf("append to an offline log: %v, want ErrLogDirOffline", err)
		}
	}
	for _, p := range failing {
		if _, err := m.GetOrCreate("t", p, DefaultLogConfig()); !errors.Is(err, ErrLogDirOffline) {
			t.Fatalf("reopening partition %d of the offline dir: %v, want ErrLogDirOffline", p, err)
		}
	}
	// The healthy dir goes on, and takes every new partition.
	for _, p := range healthy {
		mustAppend(t, logs[p], plain(2))
	}
	for p := int32(10); p < 13; p++ {
		l, err := m.GetOrCreate("t", p, DefaultLogConfig())
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Dir(l.Dir()) != dirs[1] {
			t.Fatalf("new partition %d placed in %s", p, l.Dir())
		}
	}
	if err := m.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dirs[0], cleanShutdownFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("clean-shutdown marker written to the failed dir: %v", err)
	}

	// Restart with the disk healthy: the directory is back with its data.
	m2, err := OpenManagerFS(OSFS{}, dirs, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	for _, p := range failing {
		l, err := m2.GetOrCreate("t", p, DefaultLogConfig())
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Dir(l.Dir()) != dirs[0] || l.LogEndOffset() != 3 {
			t.Fatalf("partition %d after restart: %s, log end offset %d", p, l.Dir(), l.LogEndOffset())
		}
		checkContiguous(t, l)
	}
	if len(m2.OfflineDirs()) != 0 {
		t.Fatalf("offline after restart: %v", m2.OfflineDirs())
	}
}

// TestDiskErrorsThatDoNotFailTheDir: a missing file and running out of
// descriptors say nothing about the disk.
func TestDiskErrorsThatDoNotFailTheDir(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&os.PathError{Op: "open", Err: syscall.ENOENT}, false},
		{&os.PathError{Op: "open", Err: syscall.EMFILE}, false},
		{os.ErrClosed, false},
		{&os.PathError{Op: "write", Err: syscall.EIO}, true},
		{&os.PathError{Op: "write", Err: syscall.ENOSPC}, true},
		{&os.PathError{Op: "open", Err: syscall.EACCES}, true},
	} {
		if got := diskError(tc.err); got != tc.want {
			t.Errorf("diskError(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
