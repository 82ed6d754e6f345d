package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kbroker/kbroker/storage/cleaner"
	"github.com/kbroker/kbroker/wire/record"
)

// A dirty section with more distinct keys than log.cleaner.dedupe.buffer.size
// holds is cleaned in passes: each pass's key map stays within the
// buffer, and the passes together leave what one unbounded pass would.
func TestCleanInPassesWithinDedupeBuffer(t *testing.T) {
	tests := []struct {
		name       string
		buffer     int64
		wantPasses func(n int) bool
	}{
		{"unbounded: one pass", DefaultDedupeBufferSize, func(n int) bool { return n == 1 }},
		{"100 slots: several passes", 100 * cleaner.KeySlotBytes, func(n int) bool { return n > 2 }},
		{"40 slots: many passes", 40 * cleaner.KeySlotBytes, func(n int) bool { return n > 5 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := compactConfig()
			// Tombstones stay: a first cleaning only gives them a delete horizon.
			cfg.DeleteRetentionMs = (24 * time.Hour).Milliseconds()
			_, l := openTestManager(t, OSFS{}, t.TempDir(), cfg)
			// 600 records over 400 keys, every 11th a tombstone, an hour old.
			for i := range 200 {
				var recs []kv
				for j := range 3 {
					seq := i*3 + j
					r := k(fmt.Sprintf("key-%d", seq*7%400), fmt.Sprintf("value-%d", seq))
					if seq%11 == 10 {
						r.value = nil
					}
					recs = append(recs, r)
				}
				appendKeyed(t, l, record.CodecNone, testNow-time.Hour.Milliseconds(), recs...)
			}
			before := records(t, l)
			active := l.activeLocked().base
			l.SetCleanerLimits(CleanerLimits{DedupeBufferSize: tc.buffer})
			passes := 0
			for end := int64(-1); end < active; passes++ {
				if passes > 100 {
					t.Fatal("cleaning does not progress")
				}
				st, err := l.Clean(time.UnixMilli(testNow))
				if err != nil {
					t.Fatal(err)
				}
				if st.KeyMapBytes > tc.buffer {
					t.Fatalf("pass %d: key map of %d bytes, buffer %d", passes, st.KeyMapBytes, tc.buffer)
				}
				if st.CleanableEnd <= end {
					t.Fatalf("pass %d did not advance: %+v", passes, st)
				}
				if st.KeyMapFull != (st.CleanableEnd < active) {
					t.Fatalf("pass %d: full %v but cleanable end %d of %d", passes, st.KeyMapFull, st.CleanableEnd, active)
				}
				end = st.CleanableEnd
			}
			if !tc.wantPasses(passes) {
				t.Fatalf("%d passes", passes)
			}
			if got, want := records(t, l), compacted(before, active, false); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("after %d passes:\n got %v\nwant %v", passes, got, want)
			}
		})
	}
}

// max.compaction.lag.ms: a log below its min.cleanable.dirty.ratio is
// cleaned anyway once its oldest dirty record is older than the lag.
func TestMaxCompactionLagForcesClean(t *testing.T) {
	hour := time.Hour.Milliseconds()
	tests := []struct {
		name      string
		lag       int64
		dirtyAge  int64
		wantClean bool
	}{
		{"no lag: ratio rules", 1<<63 - 1, 2 * hour, false},
		{"dirty older than lag: forced", hour, 2 * hour, true},
		{"dirty younger than lag: waits", 3 * hour, 2 * hour, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := compactConfig()
			cfg.MinCleanableDirtyRatio = 0.9
			cfg.MaxCompactionLagMs = tc.lag
			cfg.SegmentAge = 0
			m, l := openTestManager(t, OSFS{}, t.TempDir(), cfg)
			now := time.UnixMilli(testNow)
			old := testNow - tc.dirtyAge
			fillKeyed(t, l, record.CodecNone, 60, 10, old)
			if m.CleanLogs(context.Background(), now) != 1 {
				t.Fatal("first clean")
			}
			// A little dirt, below the ratio, then roll it out of the
			// active segment.
			fillKeyed(t, l, record.CodecNone, 20, 10, old)
			for n := len(segmentFiles(t, l.Dir())); len(segmentFiles(t, l.Dir())) == n; {
				appendKeyed(t, l, record.CodecNone, testNow, k("fresh", "x"))
			}
			c, err := l.cleanability(now)
			if err != nil {
				t.Fatal(err)
			}
			if c.ratio >= cfg.MinCleanableDirtyRatio || c.ratio == 0 {
				t.Fatalf("dirty ratio %v: the case needs some dirt below the threshold", c.ratio)
			}
			if got := m.CleanLogs(context.Background(), now) == 1; got != tc.wantClean {
				t.Fatalf("cleaned %v (ratio %v, forced %v)", got, c.ratio, c.forced)
			}
		})
	}
}

// A compacted log's active segment rolls by max.compaction.lag.ms when it
// is shorter than segment.ms, so that its records become cleanable.
func TestMaxCompactionLagRollsActiveSegment(t *testing.T) {
	for _, policy := range []string{"compact", "delete"} {
		cfg := compactConfig()
		cfg.CleanupPolicy = policy
		cfg.SegmentBytes = 1 << 20
		cfg.SegmentAge = time.Hour
		cfg.MaxCompactionLagMs = 1000
		_, l := openTestManager(t, OSFS{}, t.TempDir(), cfg)
		appendKeyed(t, l, record.CodecNone, testNow, k("a", "1"))
		appendKeyed(t, l, record.CodecNone, testNow+2000, k("a", "2"))
		want := map[string]int{"compact": 2, "delete": 1}[policy]
		if got := len(segmentFiles(t, l.Dir())); got != want {
			t.Errorf("%s: %d segments, want %d", policy, got, want)
		}
	}
}

// The Manager cleans the dirtiest log first.
func TestCleanOrderDirtiestFirst(t *testing.T) {
	m, err := OpenManagerFS(OSFS{}, []string{t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := compactConfig()
	cfg.MinCleanableDirtyRatio = 0.1
	var logs []*Log
	for i := range 3 {
		l, err := m.GetOrCreate("t", int32(i), cfg)
		if err != nil {
			t.Fatal(err)
		}
		logs = append(logs, l)
	}
	now := time.UnixMilli(testNow)
	// Clean all, then dirty them by different amounts: partition 1 most.
	for _, l := range logs {
		fillKeyed(t, l, record.CodecNone, 60, 10, testNow)
	}
	m.CleanLogs(context.Background(), now)
	for i, n := range []int{15, 60, 30} {
		fillKeyed(t, logs[i], record.CodecNone, n, 10, testNow)
		for s := len(segmentFiles(t, logs[i].Dir())); len(segmentFiles(t, logs[i].Dir())) == s; {
			appendKeyed(t, logs[i], record.CodecNone, testNow, k("roll", "x"))
		}
	}
	var cands []cleanCandidate
	for _, l := range logs {
		c, err := l.cleanability(now)
		if err != nil {
			t.Fatal(err)
		}
		cands = append(cands, c)
	}
	order := cleanOrder(cands)
	if len(order) != 3 || order[0].l != logs[1] || order[1].l != logs[2] || order[2].l != logs[0] {
		for _, c := range order {
			t.Logf("%s ratio %v", c.l.Dir(), c.ratio)
		}
		t.Fatal("not dirtiest first")
	}
}

// segment.jitter.ms takes a per-segment random amount off segment.ms:
// without it every segment spans the same time, with it spans spread
// over [segment.ms - jitter, segment.ms].
func TestSegmentJitterSpreadsRolls(t *testing.T) {
	const step = 50 // ms between batches
	tests := []struct {
		name            string
		jitter          time.Duration
		minSpan, maxSpn int64
		wantDistinct    int
	}{
		{"no jitter", 0, 1050, 1050, 1},
		{"jitter 800ms", 800 * time.Millisecond, 250, 1050, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultLogConfig()
			cfg.SegmentAge = time.Second
			cfg.SegmentJitter = tc.jitter
			_, l := openTestManager(t, OSFS{}, t.TempDir(), cfg)
			for i := range 1000 {
				mustAppend(t, l, tsBatch(1, testNow+int64(i)*step))
			}
			l.mu.RLock()
			segs := append([]*segment(nil), l.mu.segments...)
			l.mu.RUnlock()
			if len(segs) < 20 {
				t.Fatalf("%d segments", len(segs))
			}
			distinct := map[int64]bool{}
			for i := 0; i+1 < len(segs); i++ {
				span := segs[i+1].firstTimestamp - segs[i].firstTimestamp
				if span < tc.minSpan || span > tc.maxSpn {
					t.Fatalf("segment %d spans %d ms", i, span)
				}
				distinct[span] = true
			}
			if len(distinct) < tc.wantDistinct || (tc.wantDistinct == 1 && len(distinct) != 1) {
				t.Fatalf("%d distinct spans over %d segments", len(distinct), len(segs))
			}
		})
	}
}

// file.delete.delay.ms: segments deleted by retention leave their files
// renamed .deleted until the delay has passed, then the Manager removes
// them.
func TestFileDeleteDelay(t *testing.T) {
	tests := []struct {
		name  string
		delay time.Duration
	}{
		{"no delay: removed at once", 0},
		{"one minute", time.Minute},
		{"one hour", time.Hour},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := retentionConfig()
			cfg.FileDeleteDelayMs = tc.delay.Milliseconds()
			m, l := openTestManager(t, OSFS{}, t.TempDir(), cfg)
			fillSegments(t, l, 4, func(int) int64 { return testNow })
			deletedAt := time.Now()
			n, err := l.ApplyRetention(time.UnixMilli(testNow), -1, 0)
			if err != nil || n < 3 {
				t.Fatalf("deleted %d segments, %v", n, err)
			}
			deleted, _ := filepath.Glob(filepath.Join(l.Dir(), "*.deleted"))
			if tc.delay == 0 {
				if len(deleted) != 0 {
					t.Fatalf("left %v", deleted)
				}
				return
			}
			if len(deleted) != 3*n {
				t.Fatalf("%d .deleted files for %d segments: %v", len(deleted), n, deleted)
			}
			if got := m.DeleteDue(deletedAt.Add(tc.delay / 2)); got != 0 {
				t.Fatalf("removed %d files before the delay", got)
			}
			if got := m.DeleteDue(deletedAt.Add(tc.delay + time.Second)); got != 3*n {
				t.Fatalf("removed %d files after the delay, want %d", got, 3*n)
			}
			if left, _ := filepath.Glob(filepath.Join(l.Dir(), "*.deleted")); len(left) != 0 {
				t.Fatalf("left %v", left)
			}
			// The log is intact and reopens.
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(l.Dir()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// file.delete.delay.ms applies to truncation too (a follower truncating by
// leader epoch, or fully): the removed segments stay renamed .deleted
// until the delay passes, and a reopen removes any left.
func TestFileDeleteDelayOnTruncation(t *testing.T) {
	tests := []struct {
		name     string
		truncate func(l *Log) error
		wantEnd  int64
	}{
		{"TruncateTo", func(l *Log) error { return l.TruncateTo(20) }, 20},
		{"TruncateFullyAndStartAt", func(l *Log) error { return l.TruncateFullyAndStartAt(100) }, 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := smallConfig()
			cfg.SegmentBytes = 1024
			cfg.FileDeleteDelayMs = time.Minute.Milliseconds()
			m, l := openTestManager(t, OSFS{}, dir, cfg)
			buildLog(t, l, 60)
			segments := func() int {
				logs, _ := filepath.Glob(filepath.Join(l.Dir(), "*.log"))
				return len(logs)
			}
			before := segments()
			truncatedAt := time.Now()
			if err := tc.truncate(l); err != nil {
				t.Fatal(err)
			}
			if l.LogEndOffset() != tc.wantEnd {
				t.Fatalf("log end offset %d, want %d", l.LogEndOffset(), tc.wantEnd)
			}
			gone := before - segments()
			if tc.name == "TruncateFullyAndStartAt" {
				gone = before // the new segment has a new base
			}
			deleted, _ := filepath.Glob(filepath.Join(l.Dir(), "*.log.deleted"))
			all, _ := filepath.Glob(filepath.Join(l.Dir(), "*.deleted"))
			if gone == 0 || len(deleted) != gone || len(all) < 3*gone {
				t.Fatalf("%d segments truncated away, %d .log.deleted, %d .deleted files", gone, len(deleted), len(all))
			}
			if got := m.DeleteDue(truncatedAt.Add(30 * time.Second)); got != 0 {
				t.Fatalf("removed %d files before the delay", got)
			}
			if got := m.DeleteDue(truncatedAt.Add(time.Minute + time.Second)); got != len(all) {
				t.Fatalf("removed %d files after the delay, want %d", got, len(all))
			}
			if left, _ := filepath.Glob(filepath.Join(l.Dir(), "*.deleted")); len(left) != 0 {
				t.Fatalf("left %v", left)
			}

			// A truncation the broker stopped before the delay passed:
			// the reopen removes its .deleted files and the log goes on.
			for range 40 {
				mustAppend(t, l, plain(5))
			}
			if err := l.TruncateTo(tc.wantEnd + 5); err != nil {
				t.Fatal(err)
			}
			if left, _ := filepath.Glob(filepath.Join(l.Dir(), "*.log.deleted")); len(left) == 0 {
				t.Fatal("the second truncation deleted no segment")
			}
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			_, l2 := openTestManager(t, OSFS{}, dir, cfg)
			if left, _ := filepath.Glob(filepath.Join(l2.Dir(), "*.deleted")); len(left) != 0 {
				t.Fatalf("reopen left %v", left)
			}
			if l2.LogEndOffset() != tc.wantEnd+5 {
				t.Fatalf("reopened log end offset %d, want %d", l2.LogEndOffset(), tc.wantEnd+5)
			}
			checkContiguous(t, l2)
		})
	}
}

// file.delete.delay.ms applies to a deleted partition: its directory is
// renamed <topic>-<partition>.<id>-delete at once (the name is free for a
// new partition) and removed after the delay; a reopen removes one left.
func TestFileDeleteDelayOnPartitionDelete(t *testing.T) {
	dir := t.TempDir()
	cfg := smallConfig()
	cfg.FileDeleteDelayMs = time.Minute.Milliseconds()
	m, l := openTestManager(t, OSFS{}, dir, cfg)
	buildLog(t, l, 10)
	deletedAt := time.Now()
	if err := m.Delete("t", 0); err != nil {
		t.Fatal(err)
	}
	renamed, _ := filepath.Glob(filepath.Join(dir, "t-0.*-delete"))
	if len(renamed) != 1 {
		t.Fatalf("renamed directories %v, want one", renamed)
	}
	if id := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(renamed[0]), "t-0."), "-delete"); len(id) != 32 {
		t.Fatalf("unique id %q, want 32 hex digits", id)
	}
	if _, err := os.Stat(filepath.Join(dir, "t-0")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("t-0 still there: %v", err)
	}
	// The same partition created again starts empty, beside the old one.
	l2, err := m.GetOrCreate("t", 0, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if l2.LogEndOffset() != 0 {
		t.Fatalf("recreated partition ends at %d", l2.LogEndOffset())
	}
	if got := m.DeleteDue(deletedAt.Add(30 * time.Second)); got != 0 {
		t.Fatalf("removed %d before the delay", got)
	}
	if got := m.DeleteDue(deletedAt.Add(time.Minute + time.Second)); got != 1 {
		t.Fatalf("removed %d after the delay, want the directory", got)
	}
	if _, err := os.Stat(renamed[0]); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s still there: %v", renamed[0], err)
	}

	// Deleted again, and the broker stops before the delay: the next
	// open removes the directory and does not load it as a partition.
	mustAppend(t, l2, plain(5))
	if err := m.Delete("t", 0); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*-delete")); len(left) != 1 {
		t.Fatalf("before the reopen: %v", left)
	}
	m3, err := OpenManagerFS(OSFS{}, []string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m3.Close()
	if left, _ := filepath.Glob(filepath.Join(dir, "*-delete")); len(left) != 0 {
		t.Fatalf("reopen left %v", left)
	}
	if _, ok := m3.Get("t", 0); ok || len(m3.dirs[0].partitions) != 0 {
		t.Fatalf("partitions after the reopen: %v", m3.dirs[0].partitions)
	}

	// Without a delay the directory goes at once.
	cfg.FileDeleteDelayMs = 0
	if _, err := m3.GetOrCreate("u", 1, cfg); err != nil {
		t.Fatal(err)
	}
	if err := m3.Delete("u", 1); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); slices.ContainsFunc(ents, func(e os.DirEntry) bool { return strings.HasPrefix(e.Name(), "u-1") }) {
		t.Fatalf("u-1 left: %v", ents)
	}
}
