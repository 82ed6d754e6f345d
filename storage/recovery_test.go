package storage

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

func removeGlob(t testing.TB, dir, pattern string) {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, pattern))
	for _, n := range names {
		if err := os.Remove(n); err != nil {
			t.Fatal(err)
		}
	}
}

func segmentFiles(t testing.TB, dir string) []string {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	sort.Strings(names)
	return names
}

func TestRecoveryAfterKill(t *testing.T) {
	tests := []struct {
		name string
		// damage changes the segment files and returns the expected LEO.
		damage func(t *testing.T, segs []string, ends []int64) int64
	}{
		{"truncated tail", func(t *testing.T, segs []string, ends []int64) int64 {
			last := segs[len(segs)-1]
			fi, err := os.Stat(last)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(last, fi.Size()-5); err != nil {
				t.Fatal(err)
			}
			return ends[len(ends)-2]
		}},
		{"garbage tail", func(t *testing.T, segs []string, ends []int64) int64 {
			f, err := os.OpenFile(segs[len(segs)-1], os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff, 1, 2, 3}); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			return ends[len(ends)-1]
		}},
		{"corrupt middle batch drops everything after it", func(t *testing.T, segs []string, ends []int64) int64 {
			f, err := os.OpenFile(segs[0], os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			// Flip a byte in the records of the second batch of the first segment.
			hdr := make([]byte, 12)
			if _, err := f.ReadAt(hdr, 0); err != nil {
				t.Fatal(err)
			}
			first := int64(12 + int(uint32(hdr[8])<<24|uint32(hdr[9])<<16|uint32(hdr[10])<<8|uint32(hdr[11])))
			b := make([]byte, 1)
			if _, err := f.ReadAt(b, first+70); err != nil {
				t.Fatal(err)
			}
			b[0] ^= 0xff
			if _, err := f.WriteAt(b, first+70); err != nil {
				t.Fatal(err)
			}
			return ends[0]
		}},
		{"bad magic in middle", func(t *testing.T, segs []string, ends []int64) int64 {
			f, err := os.OpenFile(segs[0], os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt([]byte{1}, 16); err != nil {
				t.Fatal(err)
			}
			return 0
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := smallConfig()
			_, l := openTestManager(t, OSFS{}, dir, cfg)
			var ends []int64 // LEO after each batch
			for i := 0; i < 100; i++ {
				ends = append(ends, mustAppend(t, l, plain(3)).LastOffset+1)
			}
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			segs := segmentFiles(t, l.Dir())
			want := tc.damage(t, segs, ends)
			// Crash: no Close, no clean-shutdown marker; the recovery
			// point checkpoint is absent so everything is checked.
			_, l2 := openTestManager(t, OSFS{}, dir, cfg)
			if got := l2.LogEndOffset(); got != want {
				t.Fatalf("LEO %d after recovery, want %d", got, want)
			}
			checkContiguous(t, l2)
			if got := segmentFiles(t, l2.Dir()); want == ends[0] && len(got) != 1 {
				t.Fatalf("later segments not deleted: %v", got)
			}
			mustAppend(t, l2, plain(2))
			checkContiguous(t, l2)
		})
	}
}

func TestTornWrite(t *testing.T) {
	dir := t.TempDir()
	cfg := DefaultLogConfig()
	fsys := &faultFS{}
	_, l := openTestManager(t, fsys, dir, cfg)
	for i := 0; i < 10; i++ {
		mustAppend(t, l, plain(4))
	}
	fsys.set(func(f *faultFS) { f.tornWrite = true })
	if _, err := l.AppendAsLeader(makeBatch(plain(4)), AppendOptions{LogAppendTimeMs: -1}); !errors.Is(err, ErrStorage) {
		t.Fatalf("torn write: %v", err)
	}
	fi, _ := os.Stat(filepath.Join(l.Dir(), "00000000000000000000.log"))
	if fi.Size()%int64(len(makeBatch(plain(4)))) == 0 {
		t.Fatal("the fault did not leave half a batch")
	}
	// Reopen without Close, as after a crash.
	_, l2 := openTestManager(t, OSFS{}, dir, cfg)
	if l2.LogEndOffset() != 40 {
		t.Fatalf("LEO %d, want 40", l2.LogEndOffset())
	}
	mustAppend(t, l2, plain(4))
	checkContiguous(t, l2)
}

func TestCleanShutdownMarkerAndCheckpoint(t *testing.T) {
	dir := t.TempDir()
	m, l := openTestManager(t, OSFS{}, dir, DefaultLogConfig())
	mustAppend(t, l, plain(5))
	if _, err := os.Stat(filepath.Join(dir, cleanShutdownFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("marker present while running")
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, cleanShutdownFile)); err != nil {
		t.Fatal("no marker after Close")
	}
	data, err := os.ReadFile(filepath.Join(dir, recoveryPointFile))
	if err != nil || string(data) != "0\n1\nt 0 5\n" {
		t.Fatalf("checkpoint %q %v", data, err)
	}
	m2, err := OpenManager([]string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !m2.dirs[0].clean {
		t.Fatal("clean shutdown not noticed")
	}
	if _, err := os.Stat(filepath.Join(dir, cleanShutdownFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("marker not removed at open")
	}
	if err := m2.Delete("t", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "t-0")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("partition dir not deleted")
	}
}

// Offsets past what a segment can index end the recovered log.
func TestRecoverHugeOffsets(t *testing.T) {
	for _, base := range []int64{math.MaxInt64 - 1, math.MaxInt64 / 2, 1 << 31} {
		dir := t.TempDir()
		pdir := filepath.Join(dir, "t-0")
		if err := os.MkdirAll(pdir, 0o755); err != nil {
			t.Fatal(err)
		}
		b := makeBatch(plain(3))
		b.SetBaseOffset(base)
		good := makeBatch(plain(1))
		data := append(append([]byte{}, good...), b...)
		if err := os.WriteFile(filepath.Join(pdir, "00000000000000000000.log"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, l := openTestManager(t, OSFS{}, dir, smallConfig())
		if l.LogEndOffset() != 1 {
			t.Fatalf("base %d: LEO %d, want 1", base, l.LogEndOffset())
		}
		mustAppend(t, l, plain(2))
		checkContiguous(t, l)
	}
}
