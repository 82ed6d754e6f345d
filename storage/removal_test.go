package storage

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kbroker/kbroker/storage/logfs"
)

// snapshotOffsets lists the offsets of the producer snapshots in dir.
func snapshotOffsets(t testing.TB, dir string) []int64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var offs []int64
	for _, e := range ents {
		if off, ok := logfs.ParseFileName(e.Name(), logfs.SnapshotSuffix); ok {
			offs = append(offs, off)
		}
	}
	return offs
}

// A producer snapshot above the new log end offset that truncation cannot
// remove fails the truncation: left in place, it would be loaded as the
// producer state once the log grew past it again and the broker crashed
// before a newer snapshot. The next open removes it and replays the log.
func TestTruncateFailsWhenSnapshotRemovalFails(t *testing.T) {
	tests := []struct {
		name     string
		truncate func(l *Log) error
	}{
		{"TruncateTo", func(l *Log) error { return l.TruncateTo(20) }},
		{"TruncateFullyAndStartAt", func(l *Log) error { return l.TruncateFullyAndStartAt(10) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			fsys := &faultFS{}
			cfg := smallConfig()
			cfg.SegmentBytes = 1024 // rolls, each writing a snapshot
			_, l := openTestManager(t, fsys, dir, cfg)
			buildLog(t, l, 60)
			snaps := snapshotOffsets(t, l.Dir())
			if len(snaps) == 0 || snaps[len(snaps)-1] <= 20 {
				t.Fatalf("snapshots %v: want one above the truncation point", snaps)
			}
			fsys.set(func(f *faultFS) {
				f.removeFails = func(name string) bool { return strings.HasSuffix(name, logfs.SnapshotSuffix) }
			})
			if err := tc.truncate(l); !errors.Is(err, ErrStorage) {
				t.Fatalf("truncate: %v, want ErrStorage", err)
			}
			if _, err := l.AppendAsLeader(makeBatch(plain(1)), AppendOptions{LogAppendTimeMs: -1}); !errors.Is(err, ErrStorage) {
				t.Fatalf("append after the failed truncation: %v, want ErrStorage", err)
			}

			// Restart (without Close: the log has failed) and let the
			// producer write past the stale snapshot's offset again.
			_, l2 := openTestManager(t, OSFS{}, dir, cfg)
			for _, off := range snapshotOffsets(t, l2.Dir()) {
				if off > l2.LogEndOffset() {
					t.Fatalf("snapshot %d above the log end offset %d after reopen", off, l2.LogEndOffset())
				}
			}
			_, last, ok := l2.ProducerState(7)
			if ok != (l2.LogEndOffset() > l2.LogStartOffset()) || (ok && last != int32(l2.LogEndOffset()-1)) {
				t.Fatalf("producer 7 last sequence %d (%v), log [%d, %d)", last, ok, l2.LogStartOffset(), l2.LogEndOffset())
			}
			// Producer 8 writes past every old snapshot offset; after a
			// crash its state comes from the log, producer 7's stays.
			want7, want7ok := last, ok
			for i := 0; l2.LogEndOffset() <= snaps[len(snaps)-1]; i++ {
				mustAppend(t, l2, idem(8, 0, int32(4*i), 4))
			}
			end := l2.LogEndOffset()
			if err := l2.Flush(); err != nil {
				t.Fatal(err)
			}
			_, l3 := openTestManager(t, OSFS{}, dir, cfg)
			if l3.LogEndOffset() != end {
				t.Fatalf("log end offset %d after the crash, want %d", l3.LogEndOffset(), end)
			}
			if _, last, ok := l3.ProducerState(7); ok != want7ok || last != want7 {
				t.Fatalf("producer 7 last sequence %d (%v), want %d (%v)", last, ok, want7, want7ok)
			}
			if _, last, ok := l3.ProducerState(8); !ok || (last+1)%4 != 0 {
				t.Fatalf("producer 8 last sequence %d (%v)", last, ok)
			}
		})
	}
}

// Opening a log removes leftovers. Those nothing reads may stay if their
// removal fails; an orphan index (a later segment at its base offset would
// trust it) and a producer snapshot above the log end offset may not.
func TestOpenRemovesLeftovers(t *testing.T) {
	tests := []struct {
		name     string
		file     string // created in the partition directory before the reopen
		wantOpen bool
	}{
		{"temporary file", "leader-epoch-checkpoint.tmp", true},
		{"deleted segment", "00000000000000099000.log.deleted", true},
		{"older producer snapshot", "00000000000000000000" + logfs.SnapshotSuffix, true},
		{"orphan offset index", "00000000000000099000" + logfs.IndexSuffix, false},
		{"orphan transaction index", "00000000000000099000" + logfs.TxnIndexSuffix, false},
		{"snapshot above the log end offset", "00000000000000099000" + logfs.SnapshotSuffix, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := smallConfig()
			m, l := openTestManager(t, OSFS{}, dir, cfg)
			buildLog(t, l, 10)
			pdir := l.Dir()
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(pdir, tc.file)
			if err := os.WriteFile(path, []byte("leftover"), 0o640); err != nil {
				t.Fatal(err)
			}

			// The log alone: under a Manager an EIO takes the whole
			// directory offline (logdir_failure.go).
			fsys := &faultFS{removeFails: func(name string) bool { return name == path }}
			l2, err := OpenLog(pdir, cfg, LogOptions{FS: fsys, Clean: true, RecoveryPoint: 40})
			if err == nil {
				err = l2.Close()
			}
			if tc.wantOpen {
				if err != nil {
					t.Fatalf("open with %s left: %v", tc.file, err)
				}
			} else if !errors.Is(err, ErrStorage) {
				t.Fatalf("open with %s left: %v, want ErrStorage", tc.file, err)
			}

			// Once removal works, the open removes it.
			_, l3 := openTestManager(t, OSFS{}, dir, cfg)
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("%s still there: %v", tc.file, err)
			}
			if l3.LogEndOffset() != 40 {
				t.Fatalf("log end offset %d, want 40", l3.LogEndOffset())
			}
			checkContiguous(t, l3)
		})
	}
}
