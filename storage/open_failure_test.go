package storage

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/kbroker/kbroker/storage/logfs"
)

// emfileFS fails the open of every .timeindex with EMFILE while failing is
// set, after the segment's .log and .index were created: the state a
// broker out of file descriptors is left in half way through a partition.
type emfileFS struct {
	OSFS
	failing atomic.Bool
}

func (f *emfileFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if f.failing.Load() && strings.HasSuffix(name, logfs.TimeIndexSuffix) {
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EMFILE}
	}
	return f.OSFS.OpenFile(name, flag, perm)
}

// TestGetOrCreateFailureLeavesNoDirectory: a new partition whose files
// cannot be opened returns the error (EMFILE kept for errors.Is) and leaves
// no directory; an existing partition's data is kept when its reopen
// fails; a later GetOrCreate, with descriptors back, succeeds.
func TestGetOrCreateFailureLeavesNoDirectory(t *testing.T) {
	dir := t.TempDir()
	fsys := &emfileFS{}
	m, err := OpenManagerFS(fsys, []string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	old, err := m.GetOrCreate("old", 0, DefaultLogConfig())
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, old, plain(3))
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if m, err = OpenManagerFS(fsys, []string{dir}, nil); err != nil {
		t.Fatal(err)
	}
	defer m.Close()

	fsys.failing.Store(true)
	for _, c := range []struct {
		topic   string
		wantDir bool
	}{
		{"new", false}, // created by this call: removed
		{"old", true},  // loaded at open: its data stays
	} {
		_, err := m.GetOrCreate(c.topic, 0, DefaultLogConfig())
		if !errors.Is(err, syscall.EMFILE) || !errors.Is(err, ErrStorage) || !strings.Contains(err.Error(), c.topic+"-0") {
			t.Fatalf("%s: GetOrCreate: %v, want EMFILE naming the partition", c.topic, err)
		}
		if _, ok := m.Get(c.topic, 0); ok {
			t.Fatalf("%s: a log that failed to open is registered", c.topic)
		}
		_, serr := os.Stat(filepath.Join(dir, c.topic+"-0"))
		if exists := serr == nil; exists != c.wantDir {
			t.Fatalf("%s: directory exists %v, want %v (%v)", c.topic, exists, c.wantDir, serr)
		}
	}

	fsys.failing.Store(false)
	l, err := m.GetOrCreate("new", 0, DefaultLogConfig())
	if err != nil {
		t.Fatalf("GetOrCreate with descriptors back: %v", err)
	}
	mustAppend(t, l, plain(1))
	if l, err = m.GetOrCreate("old", 0, DefaultLogConfig()); err != nil || l.LogEndOffset() != 3 {
		t.Fatalf("old partition after the failure: %v, log end offset %d, want 3", err, l.LogEndOffset())
	}
}
