package storage

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/kbroker/kbroker/wire/record"
)

func appendEpoch(t *testing.T, l *Log, s spec, epoch int32) AppendResult {
	t.Helper()
	res, err := l.AppendAsLeader(makeBatch(s), AppendOptions{LeaderEpoch: epoch, LogAppendTimeMs: -1})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func readEpochFile(t *testing.T, l *Log) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(l.Dir(), leaderEpochFile))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestLeaderEpochCache(t *testing.T) {
	dir := t.TempDir()
	cfg := smallConfig()
	m, l := openTestManager(t, OSFS{}, dir, cfg)
	if _, ok := l.LatestEpoch(); ok {
		t.Fatal("epoch in an empty log")
	}
	if off, e := l.EndOffsetForEpoch(0); off != -1 || e != -1 {
		t.Fatalf("empty cache: %d, %d", off, e)
	}
	for i := 0; i < 10; i++ {
		appendEpoch(t, l, plain(3), 1) // 0..29
	}
	for i := 0; i < 10; i++ {
		appendEpoch(t, l, plain(3), 3) // 30..59
	}
	for i := 0; i < 30; i++ {
		appendEpoch(t, l, plain(3), 6) // 60..149
	}
	const want = "0\n3\n1 0\n3 30\n6 60\n"
	if got := readEpochFile(t, l); got != want {
		t.Fatalf("epoch file %q, want %q", got, want)
	}
	if e, ok := l.LatestEpoch(); !ok || e != 6 {
		t.Fatalf("latest epoch %d %v", e, ok)
	}
	tests := []struct {
		epoch     int32
		wantOff   int64
		wantEpoch int32
	}{
		{-1, -1, -1},
		{0, -1, -1}, // below the first known epoch
		{1, 30, 1},
		{2, 30, 1},
		{3, 60, 3},
		{5, 60, 3},
		{6, 150, 6}, // the latest: the log end offset
		{7, -1, -1},
	}
	check := func(l *Log) {
		t.Helper()
		for _, tc := range tests {
			if off, e := l.EndOffsetForEpoch(tc.epoch); off != tc.wantOff || e != tc.wantEpoch {
				t.Errorf("EndOffsetForEpoch(%d) = %d, %d; want %d, %d", tc.epoch, off, e, tc.wantOff, tc.wantEpoch)
			}
		}
	}
	check(l)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	// Rebuilt from the batches when the file is lost and the log recovered.
	mustRemove(t, filepath.Join(l.Dir(), leaderEpochFile))
	mustRemove(t, filepath.Join(dir, cleanShutdownFile))
	mustRemove(t, filepath.Join(dir, recoveryPointFile))
	_, l2 := openTestManager(t, OSFS{}, dir, cfg)
	if got := readEpochFile(t, l2); got != want {
		t.Fatalf("rebuilt epoch file %q, want %q", got, want)
	}
	check(l2)
}

func TestEpochEntriesPastEndDroppedAtOpen(t *testing.T) {
	dir := t.TempDir()
	m, l := openTestManager(t, OSFS{}, dir, smallConfig())
	appendEpoch(t, l, plain(5), 2)
	m.Close()
	if err := os.WriteFile(filepath.Join(l.Dir(), leaderEpochFile), []byte("0\n3\n2 0\n4 5\n7 9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, l2 := openTestManager(t, OSFS{}, dir, smallConfig())
	if got := readEpochFile(t, l2); got != "0\n1\n2 0\n" {
		t.Fatalf("epoch file %q", got)
	}
}

// buildLog appends batch i (4 records, epoch 1 + i/20, idempotent producer
// 7 with sequences 4i..4i+3) until offset n.
func buildLog(t *testing.T, l *Log, batches int) {
	t.Helper()
	for i := 0; i < batches; i++ {
		appendEpoch(t, l, idem(7, 0, int32(4*i), 4), int32(1+i/20))
	}
}

func TestTruncateTo(t *testing.T) {
	tests := []struct {
		name      string
		offset    int64
		wantLEO   int64
		wantEpoch string
	}{
		{"at the end: nothing", 240, 240, "0\n3\n1 0\n2 80\n3 160\n"},
		{"past the end: nothing", 1000, 240, "0\n3\n1 0\n2 80\n3 160\n"},
		{"batch boundary in the active segment", 236, 236, "0\n3\n1 0\n2 80\n3 160\n"},
		{"inside a batch: its base", 162, 160, "0\n2\n1 0\n2 80\n"},
		{"epoch start", 80, 80, "0\n1\n1 0\n"},
		{"early segment", 13, 12, "0\n1\n1 0\n"},
		{"everything", 0, 0, "0\n0\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := smallConfig()
			m, l := openTestManager(t, OSFS{}, dir, cfg)
			buildLog(t, l, 60)
			if err := l.TruncateTo(tc.offset); err != nil {
				t.Fatal(err)
			}
			if l.LogEndOffset() != tc.wantLEO {
				t.Fatalf("LEO %d, want %d", l.LogEndOffset(), tc.wantLEO)
			}
			checkContiguous(t, l)
			if got := readEpochFile(t, l); got != tc.wantEpoch {
				t.Fatalf("epoch file %q, want %q", got, tc.wantEpoch)
			}
			if _, last, ok := l.ProducerState(7); (tc.wantLEO > 0) != ok || (ok && last != int32(tc.wantLEO-1)) {
				t.Fatalf("producer last sequence %d %v, want %d", last, ok, tc.wantLEO-1)
			}
			// The next batch of the producer continues the sequence.
			res := appendEpoch(t, l, idem(7, 0, int32(tc.wantLEO), 4), 9)
			if res.FirstOffset != tc.wantLEO {
				t.Fatalf("append after truncation at %d", res.FirstOffset)
			}
			checkContiguous(t, l)
			if _, _, _, err := l.OffsetForTimestamp(testNow); err != nil {
				t.Fatal(err)
			}
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			_, l2 := openTestManager(t, OSFS{}, dir, cfg)
			if l2.LogEndOffset() != tc.wantLEO+4 {
				t.Fatalf("after reopen LEO %d", l2.LogEndOffset())
			}
			checkContiguous(t, l2)
			if e, ok := l2.LatestEpoch(); !ok || e != 9 {
				t.Fatalf("latest epoch %d", e)
			}
		})
	}
}

func TestTruncateBelowStartAndFully(t *testing.T) {
	dir := t.TempDir()
	cfg := smallConfig()
	m, l := openTestManager(t, OSFS{}, dir, cfg)
	buildLog(t, l, 30)
	if err := l.TruncateFullyAndStartAt(500); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 500 || l.LogEndOffset() != 500 {
		t.Fatalf("[%d, %d)", l.LogStartOffset(), l.LogEndOffset())
	}
	if got := segmentFiles(t, l.Dir()); len(got) != 1 || filepath.Base(got[0]) != "00000000000000000500.log" {
		t.Fatalf("segments %v", got)
	}
	if _, ok := l.LatestEpoch(); ok {
		t.Fatal("epochs kept")
	}
	if _, _, ok := l.ProducerState(7); ok {
		t.Fatal("producer state kept")
	}
	if _, err := l.Read(499, 100, 1000, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below: %v", err)
	}
	res := appendEpoch(t, l, plain(2), 4)
	if res.FirstOffset != 500 {
		t.Fatalf("first offset %d", res.FirstOffset)
	}
	m.Close()
	_, l2 := openTestManager(t, OSFS{}, dir, cfg)
	if l2.LogStartOffset() != 500 || l2.LogEndOffset() != 502 {
		t.Fatalf("after reopen [%d, %d)", l2.LogStartOffset(), l2.LogEndOffset())
	}
	checkContiguous(t, l2)
}

// A crash while TruncateTo deletes segments leaves a consistent log: a
// prefix of the old one at least as long as the target.
func TestTruncateCrashSafe(t *testing.T) {
	for renames := 0; renames < 4; renames++ {
		dir := t.TempDir()
		fsys := &faultFS{}
		cfg := smallConfig()
		cfg.SegmentBytes = 1024
		_, l := openTestManager(t, fsys, dir, cfg)
		buildLog(t, l, 60)
		if len(l.mu.segments) < 6 {
			t.Fatalf("%d segments", len(l.mu.segments))
		}
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
		old := readAll(t, l)
		fsys.set(func(f *faultFS) { f.limitRenames, f.renamesLeft = true, renames })
		if err := l.TruncateTo(20); err == nil {
			t.Fatalf("renames %d: no error from the crash", renames)
		}
		_, l2 := openTestManager(t, OSFS{}, dir, cfg)
		checkContiguous(t, l2)
		got := readAll(t, l2)
		if l2.LogEndOffset() < 20 || len(got) > len(old) {
			t.Fatalf("renames %d: LEO %d", renames, l2.LogEndOffset())
		}
		for i := range got {
			if !bytes.Equal(got[i], old[i]) {
				t.Fatalf("renames %d: batch %d differs", renames, i)
			}
		}
		if off, _ := l2.EndOffsetForEpoch(3); l2.LogEndOffset() > 160 && off != l2.LogEndOffset() {
			t.Fatalf("renames %d: epoch 3 ends at %d, LEO %d", renames, off, l2.LogEndOffset())
		}
		if _, last, _ := l2.ProducerState(7); last != int32(l2.LogEndOffset()-1) {
			t.Fatalf("renames %d: producer last seq %d, LEO %d", renames, last, l2.LogEndOffset())
		}
	}
}

func TestAppendAsFollower(t *testing.T) {
	cfg := smallConfig()
	_, leader := openTestManager(t, OSFS{}, t.TempDir(), cfg)
	buildLog(t, leader, 60)
	fdir := t.TempDir()
	m, follower := openTestManager(t, OSFS{}, fdir, cfg)
	for off := int64(0); off < leader.LogEndOffset(); {
		data, err := leader.Read(off, 700, leader.LogEndOffset(), true)
		if err != nil {
			t.Fatal(err)
		}
		last, err := follower.AppendAsFollower(data)
		if err != nil {
			t.Fatalf("at %d: %v", off, err)
		}
		off = last + 1
	}
	if follower.LogEndOffset() != leader.LogEndOffset() {
		t.Fatalf("LEO %d, leader %d", follower.LogEndOffset(), leader.LogEndOffset())
	}
	lsegs, fsegs := segmentFiles(t, leader.Dir()), segmentFiles(t, follower.Dir())
	if len(lsegs) != len(fsegs) {
		t.Fatalf("%d segments, leader %d", len(fsegs), len(lsegs))
	}
	for i := range lsegs {
		a, _ := os.ReadFile(lsegs[i])
		b, _ := os.ReadFile(fsegs[i])
		if filepath.Base(lsegs[i]) != filepath.Base(fsegs[i]) || !bytes.Equal(a, b) {
			t.Fatalf("segment %s differs", fsegs[i])
		}
	}
	if readEpochFile(t, follower) != readEpochFile(t, leader) {
		t.Fatalf("epochs %q, leader %q", readEpochFile(t, follower), readEpochFile(t, leader))
	}
	if _, last, _ := follower.ProducerState(7); last != 239 {
		t.Fatalf("producer last seq %d", last)
	}

	// Refused input writes nothing.
	next := makeBatch(plain(2))
	next.SetBaseOffset(240)
	next.SetPartitionLeaderEpoch(3)
	valid := []byte(next)
	mut := func(fn func(b record.Batch)) []byte {
		b := bytes.Clone(valid)
		fn(record.Batch(b))
		return b
	}
	tests := []struct {
		name string
		data []byte
		want error
	}{
		{"gap", mut(func(b record.Batch) { b.SetBaseOffset(241) }), ErrInvalidRecord},
		{"overlap", mut(func(b record.Batch) { b.SetBaseOffset(239) }), ErrInvalidRecord},
		{"bad CRC", mut(func(b record.Batch) { b[len(b)-1] ^= 1 }), ErrCorrupt},
		{"magic 1", mut(func(b record.Batch) { b[16] = 1 }), ErrInvalidRecord},
		{"truncated", valid[:len(valid)-3], ErrCorrupt},
		{"second batch not contiguous", append(bytes.Clone(valid), valid...), ErrInvalidRecord},
		{"trailing bytes", append(bytes.Clone(valid), 0, 0, 0), ErrCorrupt},
	}
	for _, tc := range tests {
		if _, err := follower.AppendAsFollower(tc.data); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
		if follower.LogEndOffset() != 240 {
			t.Fatalf("%s: LEO moved to %d", tc.name, follower.LogEndOffset())
		}
	}
	if last, err := follower.AppendAsFollower(valid); err != nil || last != 241 {
		t.Fatalf("valid batch: %d, %v", last, err)
	}
	if e, _ := follower.LatestEpoch(); e != 3 {
		t.Fatalf("epoch %d", e)
	}
	checkContiguous(t, follower)
	m.Close()
}
