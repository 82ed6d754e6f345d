package storage

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/kbroker/kbroker/storage/logfs"
)

// tsBatch is a batch of n records with timestamps ts..ts+n-1.
func tsBatch(n int, ts int64) spec {
	s := plain(n)
	s.ts = ts
	return s
}

// readTimeIndex decodes a .timeindex file.
func readTimeIndex(t *testing.T, path string) [][2]int64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data)%timeIndexEntrySize != 0 {
		t.Fatalf("%s: %d bytes", path, len(data))
	}
	var out [][2]int64
	for ; len(data) > 0; data = data[timeIndexEntrySize:] {
		out = append(out, [2]int64{int64(binary.BigEndian.Uint64(data)), int64(int32(binary.BigEndian.Uint32(data[8:])))})
	}
	return out
}

func TestTimeIndexWrittenAndRebuilt(t *testing.T) {
	dir := t.TempDir()
	cfg := smallConfig()
	cfg.SegmentBytes = 2048
	m, l := openTestManager(t, OSFS{}, dir, cfg)
	// Timestamps go up and down; entries must be strictly increasing.
	for i := 0; i < 60; i++ {
		mustAppend(t, l, tsBatch(3, int64(1000+(i%10)*100+i)))
	}
	segs := segmentFiles(t, l.Dir())
	if len(segs) < 3 {
		t.Fatalf("%d segments", len(segs))
	}
	want := map[string][]byte{}
	for i, seg := range segs {
		ti := seg[:len(seg)-len(logfs.LogSuffix)] + logfs.TimeIndexSuffix
		ents := readTimeIndex(t, ti)
		if len(ents) == 0 && i < len(segs)-1 {
			t.Fatalf("%s: empty time index", ti)
		}
		for j := 1; j < len(ents); j++ {
			if ents[j][0] <= ents[j-1][0] || ents[j][1] < ents[j-1][1] {
				t.Fatalf("%s: entries not increasing: %v", ti, ents)
			}
		}
		s := l.mu.segments[i]
		if i == len(segs)-1 {
			continue
		}
		last := ents[len(ents)-1]
		if last[0] != s.maxTimestamp || s.base+last[1] != s.offsetOfMaxTimestamp {
			t.Fatalf("segment %d: last entry %v, max %d at %d", s.base, last, s.maxTimestamp, s.offsetOfMaxTimestamp)
		}
		want[ti], _ = os.ReadFile(ti)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	// Damage: remove the time indexes and recover without the marker.
	removeGlob(t, l.Dir(), "*.timeindex")
	mustRemove(t, filepath.Join(dir, cleanShutdownFile))
	mustRemove(t, filepath.Join(dir, recoveryPointFile))
	_, l2 := openTestManager(t, OSFS{}, dir, cfg)
	for ti, data := range want {
		got, err := os.ReadFile(ti)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s rebuilt as %x, want %x (%v)", ti, got, data, err)
		}
	}
	for i, s := range l2.mu.segments {
		o := l.mu.segments[i]
		if s.maxTimestamp != o.maxTimestamp || s.offsetOfMaxTimestamp != o.offsetOfMaxTimestamp {
			t.Fatalf("segment %d: max %d at %d after recovery, was %d at %d", s.base,
				s.maxTimestamp, s.offsetOfMaxTimestamp, o.maxTimestamp, o.offsetOfMaxTimestamp)
		}
	}
	checkContiguous(t, l2)
}

func TestMaxTimestampAfterCleanOpen(t *testing.T) {
	dir := t.TempDir()
	cfg := smallConfig()
	m, l := openTestManager(t, OSFS{}, dir, cfg)
	for i := 0; i < 50; i++ {
		mustAppend(t, l, tsBatch(2, int64(5000-i*3+(i%4)*20)))
	}
	type st struct{ max, off int64 }
	var before []st
	for _, s := range l.mu.segments {
		before = append(before, st{s.maxTimestamp, s.offsetOfMaxTimestamp})
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	_, l2 := openTestManager(t, OSFS{}, dir, cfg) // clean: trusted files
	for i, s := range l2.mu.segments {
		if got := (st{s.maxTimestamp, s.offsetOfMaxTimestamp}); got != before[i] {
			t.Fatalf("segment %d: %v after clean open, want %v", s.base, got, before[i])
		}
	}
}

func TestRollWhenTimeIndexFull(t *testing.T) {
	cfg := DefaultLogConfig()
	cfg.IndexIntervalBytes = 0
	cfg.SegmentIndexBytes = 4 * timeIndexEntrySize // 6 offset entries, 4 time entries
	_, l := openTestManager(t, OSFS{}, t.TempDir(), cfg)
	for i := 0; i < 40; i++ {
		mustAppend(t, l, tsBatch(1, int64(100+i)))
	}
	for _, s := range l.mu.segments[:len(l.mu.segments)-1] {
		if s.tentries > timeIndexCapacity(cfg.SegmentIndexBytes) || s.entries*indexEntrySize > cfg.SegmentIndexBytes {
			t.Fatalf("segment %d: %d time entries, %d offset entries", s.base, s.tentries, s.entries)
		}
		if s.lastTimeIndexed != s.maxTimestamp {
			t.Fatalf("segment %d: last entry %d, max %d", s.base, s.lastTimeIndexed, s.maxTimestamp)
		}
	}
	if len(l.mu.segments) < 8 {
		t.Fatalf("%d segments: no roll on a full time index", len(l.mu.segments))
	}
}

func TestOffsetForTimestampNonMonotonic(t *testing.T) {
	cfg := smallConfig()
	_, l := openTestManager(t, OSFS{}, t.TempDir(), cfg)
	// Each batch of 4 gets timestamps base..base+3; bases go 0, 1000, 10, 1010, 20, ...
	var specs []spec
	for i := 0; i < 80; i++ {
		base := int64(10 * (i / 2))
		if i%2 == 1 {
			base += 1000
		}
		specs = append(specs, tsBatch(4, base))
		mustAppend(t, l, specs[i])
	}
	if len(l.mu.segments) < 3 {
		t.Fatal("want several segments")
	}
	// Brute force over the records.
	brute := func(ts int64) (int64, int64, bool) {
		for i, s := range specs {
			for r := 0; r < s.n; r++ {
				if s.ts+int64(r) >= ts {
					return int64(4*i + r), s.ts + int64(r), true
				}
			}
		}
		return 0, 0, false
	}
	for _, ts := range []int64{-1, 0, 3, 4, 5, 395, 396, 999, 1000, 1002, 1394, 1395, 1396, 1397, 5000} {
		off, got, found, err := l.OffsetForTimestamp(ts)
		wo, wt, wf := brute(ts)
		if err != nil || found != wf || (found && (off != wo || got != wt)) {
			t.Errorf("OffsetForTimestamp(%d) = %d, %d, %v, %v; want %d, %d, %v", ts, off, got, found, err, wo, wt, wf)
		}
	}
}

func TestOffsetOfMaxTimestamp(t *testing.T) {
	cfg := smallConfig()
	_, l := openTestManager(t, OSFS{}, t.TempDir(), cfg)
	if _, _, found, err := l.OffsetOfMaxTimestamp(100); found || err != nil {
		t.Fatalf("empty log: found %v, %v", found, err)
	}
	// Batch i (4 records at offsets 4i..4i+3) has timestamps ts(i)..ts(i)+3.
	ts := func(i int) int64 {
		switch i {
		case 7, 33: // ties: the first wins
			return 9000
		case 50:
			return 9500
		}
		return int64(100 + i)
	}
	for i := 0; i < 60; i++ {
		mustAppend(t, l, tsBatch(4, ts(i)))
	}
	tests := []struct {
		upper, wantOff, wantTs int64
	}{
		{1, 3, 103},          // batch granularity: batch 0 counts whole
		{4, 3, 103},          // batch 0 only
		{28, 27, 109},        // batches 0..6
		{29, 31, 9003},       // batch 7 starts below the bound
		{200, 31, 9003},      // batch 33 ties with 7
		{201, 203, 9503},     // batch 50
		{240, 203, 9503},     // everything
		{1 << 40, 203, 9503}, // beyond the end
	}
	for _, tc := range tests {
		off, got, found, err := l.OffsetOfMaxTimestamp(tc.upper)
		if err != nil || !found || off != tc.wantOff || got != tc.wantTs {
			t.Errorf("OffsetOfMaxTimestamp(%d) = %d, %d, %v, %v; want %d, %d", tc.upper, off, got, found, err, tc.wantOff, tc.wantTs)
		}
	}
}
