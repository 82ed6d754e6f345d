package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/testutil"
	"github.com/kbroker/kbroker/storage/logfs"
)

// retentionConfig rolls by size only (old test timestamps must not roll
// by segment.ms).
func retentionConfig() LogConfig {
	cfg := smallConfig()
	cfg.SegmentAge = 0
	return cfg
}

// fillSegments appends batches of 4 records until the log has at least
// n segments; batch i has timestamps ts(i)...
func fillSegments(t *testing.T, l *Log, n int, ts func(i int) int64) {
	t.Helper()
	for i := 0; len(l.mu.segments) < n; i++ {
		mustAppend(t, l, tsBatch(4, ts(i)))
	}
}

func segmentBases(l *Log) []int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var out []int64
	for _, s := range l.mu.segments {
		out = append(out, s.base)
	}
	return out
}

func TestDeleteRecordsBefore(t *testing.T) {
	dir := t.TempDir()
	cfg := retentionConfig()
	m, l := openTestManager(t, OSFS{}, dir, cfg)
	fillSegments(t, l, 5, func(int) int64 { return testNow })
	bases := segmentBases(l)
	leo := l.LogEndOffset()
	tests := []struct {
		name      string
		offset    int64
		wantLSO   int64
		wantFirst int64 // first segment base afterwards
		wantErr   error
	}{
		{"below start: no-op", 0, 0, 0, nil},
		{"inside the first segment", 5, 5, 0, nil},
		{"exactly the second base", bases[1], bases[1], bases[1], nil},
		{"inside the third", bases[2] + 3, bases[2] + 3, bases[2], nil},
		{"lower again: no-op", 2, bases[2] + 3, bases[2], nil},
		{"past the end", leo + 1, bases[2] + 3, bases[2], ErrOffsetOutOfRange},
		{"the log end: keeps the active segment", leo, leo, bases[len(bases)-1], nil},
	}
	for _, tc := range tests {
		lso, err := l.DeleteRecordsBefore(tc.offset)
		if !errors.Is(err, tc.wantErr) || (err == nil && lso != tc.wantLSO) {
			t.Fatalf("%s: DeleteRecordsBefore(%d) = %d, %v; want %d, %v", tc.name, tc.offset, lso, err, tc.wantLSO, tc.wantErr)
		}
		if got := l.LogStartOffset(); got != tc.wantLSO {
			t.Fatalf("%s: log start offset %d, want %d", tc.name, got, tc.wantLSO)
		}
		if got := segmentBases(l)[0]; got != tc.wantFirst {
			t.Fatalf("%s: first segment %d, want %d", tc.name, got, tc.wantFirst)
		}
		if tc.wantLSO > 0 {
			if _, err := l.Read(tc.wantLSO-1, 1<<20, leo, true); !errors.Is(err, ErrOffsetOutOfRange) {
				t.Fatalf("%s: read below the log start offset: %v", tc.name, err)
			}
		}
		if _, err := os.Stat(logfs.FileName(l.Dir(), bases[0], logfs.LogSuffix)); (tc.wantFirst > bases[0]) != errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s: first segment file: %v", tc.name, err)
		}
	}
	mustAppend(t, l, plain(2))
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, logStartOffsetFile))
	if want := "0\n1\nt 0 " + itoa(leo) + "\n"; err != nil || string(data) != want {
		t.Fatalf("checkpoint %q %v, want %q", data, err, want)
	}
	_, l2 := openTestManager(t, OSFS{}, dir, cfg)
	if l2.LogStartOffset() != leo || l2.LogEndOffset() != leo+2 {
		t.Fatalf("after restart: [%d, %d), want [%d, %d)", l2.LogStartOffset(), l2.LogEndOffset(), leo, leo+2)
	}
}

func TestDeleteRecordsMidSegmentSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := retentionConfig()
	m, l := openTestManager(t, OSFS{}, dir, cfg)
	fillSegments(t, l, 3, func(int) int64 { return testNow })
	if _, err := l.DeleteRecordsBefore(6); err != nil {
		t.Fatal(err)
	}
	m.Close()
	m2, l2 := openTestManager(t, OSFS{}, dir, cfg)
	if l2.LogStartOffset() != 6 {
		t.Fatalf("log start offset %d after restart, want 6", l2.LogStartOffset())
	}
	if _, err := l2.Read(5, 100, l2.LogEndOffset(), true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below the start: %v", err)
	}
	if off, _, found, err := l2.OffsetForTimestamp(0); err != nil || !found || off != 6 {
		t.Fatalf("OffsetForTimestamp(0) = %d, %v, %v; want 6", off, found, err)
	}
	m2.Close()
}

func TestApplyRetention(t *testing.T) {
	now := time.UnixMilli(10_000_000)
	tests := []struct {
		name             string
		retentionMs      int64
		retentionBytes   int64
		ts               func(i int) int64
		wantDeleted      func(sizes []int64, n int) int
		keepLastSegments bool
	}{
		{"forever", -1, -1, func(int) int64 { return 0 }, func([]int64, int) int { return 0 }, false},
		{"all old: all but the active one", 1000, -1, func(int) int64 { return 0 },
			func(_ []int64, n int) int { return n - 1 }, false},
		{"only the first two segments old", 1000, -1, func(i int) int64 {
			if i < 40 {
				return 0
			}
			return now.UnixMilli()
		}, nil, false},
		{"recent data kept", 1000, -1, func(int) int64 { return now.UnixMilli() - 10 }, func([]int64, int) int { return 0 }, false},
		{"size: keep at least retention.bytes", -1, 5000, func(int) int64 { return now.UnixMilli() }, func(sizes []int64, n int) int {
			var total int64
			for _, s := range sizes {
				total += s
			}
			k := 0
			for k < n-1 && total-sizes[k] >= 5000 {
				total -= sizes[k]
				k++
			}
			return k
		}, false},
		{"size 0: everything but the active one", -1, 0, func(int) int64 { return now.UnixMilli() },
			func(_ []int64, n int) int { return n - 1 }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			m, l := openTestManager(t, OSFS{}, dir, retentionConfig())
			fillSegments(t, l, 6, tc.ts)
			var sizes []int64
			oldest := map[int64]bool{}
			for _, s := range l.mu.segments {
				sizes = append(sizes, s.size)
				oldest[s.base] = s.maxTimestamp >= 0 && now.UnixMilli()-s.maxTimestamp > tc.retentionMs
			}
			bases := segmentBases(l)
			want := 0
			if tc.wantDeleted != nil {
				want = tc.wantDeleted(sizes, len(bases))
			} else {
				for want < len(bases)-1 && oldest[bases[want]] {
					want++
				}
				if want == 0 || want == len(bases)-1 {
					t.Fatalf("test setup: %d old segments of %d", want, len(bases))
				}
			}
			leo := l.LogEndOffset()
			n, err := l.ApplyRetention(now, tc.retentionMs, tc.retentionBytes)
			if err != nil || n != want {
				t.Fatalf("deleted %d, %v; want %d", n, err, want)
			}
			if got := l.LogStartOffset(); got != bases[want] {
				t.Fatalf("log start offset %d, want %d", got, bases[want])
			}
			if got := len(segmentFiles(t, l.Dir())); got != len(bases)-want {
				t.Fatalf("%d segment files, want %d", got, len(bases)-want)
			}
			if l.LogEndOffset() != leo {
				t.Fatal("log end offset moved")
			}
			checkContiguous(t, l)
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			_, l2 := openTestManager(t, OSFS{}, dir, retentionConfig())
			if l2.LogStartOffset() != bases[want] || l2.LogEndOffset() != leo {
				t.Fatalf("after restart [%d, %d), want [%d, %d)", l2.LogStartOffset(), l2.LogEndOffset(), bases[want], leo)
			}
		})
	}
}

// A crash in the middle of deleting segments leaves a log that opens, is
// contiguous and ends where it did.
func TestRetentionCrashSafe(t *testing.T) {
	for renames := 0; renames < 4; renames++ {
		dir := t.TempDir()
		fsys := &faultFS{}
		_, l := openTestManager(t, fsys, dir, retentionConfig())
		fillSegments(t, l, 6, func(int) int64 { return 0 })
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
		bases := segmentBases(l)
		leo := l.LogEndOffset()
		fsys.set(func(f *faultFS) { f.limitRenames, f.renamesLeft = true, renames })
		if _, err := l.ApplyRetention(time.Now(), 1000, -1); err == nil {
			t.Fatalf("renames %d: no error from the crash", renames)
		}
		_, l2 := openTestManager(t, OSFS{}, dir, retentionConfig())
		if l2.LogEndOffset() != leo {
			t.Fatalf("renames %d: LEO %d, want %d", renames, l2.LogEndOffset(), leo)
		}
		if got := l2.LogStartOffset(); got != bases[renames] {
			t.Fatalf("renames %d: log start %d, want %d", renames, got, bases[renames])
		}
		checkContiguous(t, l2)
		left, _ := filepath.Glob(filepath.Join(l2.Dir(), "*"+deletedSuffix))
		if len(left) != 0 {
			t.Fatalf("renames %d: leftovers %v", renames, left)
		}
	}
}

func TestManagerRunAppliesRetention(t *testing.T) {
	dir := t.TempDir()
	cfg := retentionConfig()
	cfg.RetentionMs = 1000
	m, l := openTestManager(t, OSFS{}, dir, cfg)
	m.SetRetentionCheckInterval(5 * time.Millisecond)
	fillSegments(t, l, 4, func(int) int64 { return 0 })
	last := segmentBases(l)[3]
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); m.Run(ctx) }()
	err := testutil.Poll(context.Background(), 5*time.Second, func() error {
		data, _ := os.ReadFile(filepath.Join(dir, logStartOffsetFile))
		if l.LogStartOffset() != last || string(data) != "0\n1\nt 0 "+itoa(last)+"\n" {
			return fmt.Errorf("log start offset %d, checkpoint %q", l.LogStartOffset(), data)
		}
		return nil
	})
	cancel()
	wg.Wait()
	if err != nil {
		t.Fatalf("log start offset not %d and checkpointed: %v", last, err)
	}
	m.Close()
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
