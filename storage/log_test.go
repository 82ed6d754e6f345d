package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kbroker/kbroker/wire/record"
)

func smallConfig() LogConfig {
	cfg := DefaultLogConfig()
	cfg.SegmentBytes = 4096
	cfg.IndexIntervalBytes = 256
	return cfg
}

func TestOffsetsAcrossBatchesAndRestarts(t *testing.T) {
	dir := t.TempDir()
	cfg := smallConfig()
	var want int64
	for round := 0; round < 4; round++ {
		m, l := openTestManager(t, OSFS{}, dir, cfg)
		if got := l.LogEndOffset(); got != want {
			t.Fatalf("round %d: LEO after reopen %d, want %d", round, got, want)
		}
		for i := 1; i <= 30; i++ {
			res := mustAppend(t, l, plain(i%7+1))
			if res.FirstOffset != want || res.LastOffset != want+int64(i%7) {
				t.Fatalf("offsets [%d,%d], want first %d", res.FirstOffset, res.LastOffset, want)
			}
			want = res.LastOffset + 1
		}
		checkContiguous(t, l)
		if round%2 == 0 {
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
		} // odd rounds "crash": no Close, the next open recovers
	}
}

func TestAppendKeepsClientBytes(t *testing.T) {
	_, l := openTestManager(t, OSFS{}, t.TempDir(), DefaultLogConfig())
	mustAppend(t, l, plain(3))

	sent := makeBatch(plain(5))
	orig := bytes.Clone(sent)
	res, err := l.AppendAsLeader(sent, AppendOptions{LeaderEpoch: 7, LogAppendTimeMs: -1})
	if err != nil {
		t.Fatal(err)
	}
	got, err := l.Read(res.FirstOffset, 1<<20, l.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	b := record.Batch(got)
	if b.BaseOffset() != 3 || b.PartitionLeaderEpoch() != 7 || res.LogAppendTimeMs != -1 {
		t.Fatalf("base %d epoch %d appendTime %d", b.BaseOffset(), b.PartitionLeaderEpoch(), res.LogAppendTimeMs)
	}
	if !bytes.Equal(got[17:], orig[17:]) {
		t.Fatal("CRC or bytes after offset 21 changed")
	}

	// LogAppendTime rewrites maxTimestamp, the attribute and the CRC only.
	sent = makeBatch(plain(2))
	orig = bytes.Clone(sent)
	res, err = l.AppendAsLeader(sent, AppendOptions{LogAppendTimeMs: 424242})
	if err != nil {
		t.Fatal(err)
	}
	got, _ = l.Read(res.FirstOffset, 1<<20, l.LogEndOffset(), true)
	b = record.Batch(got)
	if !b.LogAppendTime() || b.MaxTimestamp() != 424242 || !b.ValidCRC() || res.LogAppendTimeMs != 424242 {
		t.Fatalf("LogAppendTime not applied: %v %d %v", b.LogAppendTime(), b.MaxTimestamp(), b.ValidCRC())
	}
	if !bytes.Equal(got[61:], orig[61:]) || !bytes.Equal(got[23:35], orig[23:35]) {
		t.Fatal("records changed")
	}
}

func TestAppendRefused(t *testing.T) {
	cfg := DefaultLogConfig()
	cfg.MaxMessageBytes = 2000
	tests := []struct {
		name   string
		mutate func(b []byte) []byte
		want   error
	}{
		{"baseOffset not 0", func(b []byte) []byte {
			binary.BigEndian.PutUint64(b, 5)
			return b
		}, ErrInvalidRecord},
		{"bad CRC", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, ErrCorrupt},
		{"oversize", func([]byte) []byte { return makeBatch(spec{n: 20, valueSize: 100, pid: -1, seq: -1}) }, ErrMessageTooLarge},
		{"magic 1", func(b []byte) []byte { b[16] = 1; return b }, ErrInvalidRecord},
		{"lastOffsetDelta mismatch", func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[23:], 7)
			record.Batch(b).SetCRC()
			return b
		}, ErrInvalidRecord},
		{"zero records", func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[57:], 0)
			binary.BigEndian.PutUint32(b[23:], 0xffffffff)
			record.Batch(b).SetCRC()
			return b
		}, ErrInvalidRecord},
		{"length mismatch", func(b []byte) []byte { return append(b, 0, 0) }, ErrCorrupt},
		{"short", func(b []byte) []byte { return b[:40] }, ErrCorrupt},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, l := openTestManager(t, OSFS{}, t.TempDir(), cfg)
			b := tc.mutate(makeBatch(plain(3)))
			_, err := l.AppendAsLeader(b, AppendOptions{LogAppendTimeMs: -1})
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			fi, err := os.Stat(filepath.Join(l.Dir(), "00000000000000000000.log"))
			if err != nil || fi.Size() != 0 || l.LogEndOffset() != 0 {
				t.Fatalf("something was written: %v size %d LEO %d", err, fi.Size(), l.LogEndOffset())
			}
		})
	}
}

func TestRollBySizeAndIndexLookups(t *testing.T) {
	dir := t.TempDir()
	cfg := smallConfig()
	m, l := openTestManager(t, OSFS{}, dir, cfg)
	for i := 0; i < 200; i++ {
		mustAppend(t, l, plain(i%5+1))
	}
	segs, _ := filepath.Glob(filepath.Join(l.Dir(), "*.log"))
	if len(segs) < 5 {
		t.Fatalf("only %d segments", len(segs))
	}
	for _, s := range segs {
		fi, _ := os.Stat(s)
		if fi.Size() > cfg.SegmentBytes {
			t.Fatalf("%s is %d bytes > segment.bytes", s, fi.Size())
		}
		idx, _ := os.Stat(s[:len(s)-4] + ".index")
		if fi.Size() > 2*int64(cfg.IndexIntervalBytes) && idx.Size() == 0 {
			t.Fatalf("%s has an empty index", s)
		}
	}
	checkEveryOffset := func(l *Log) {
		t.Helper()
		for off := int64(0); off < l.LogEndOffset(); off++ {
			data, err := l.Read(off, 1, l.LogEndOffset(), true)
			if err != nil {
				t.Fatal(err)
			}
			b, _, err := record.Parse(data)
			if err != nil || b.BaseOffset() > off || b.LastOffset() < off {
				t.Fatalf("read %d gave batch [%d,%d] err %v", off, b.BaseOffset(), b.LastOffset(), err)
			}
		}
	}
	checkEveryOffset(l)
	m.Close()
	// A lost index is rebuilt even after a clean shutdown.
	mustRemove(t, filepath.Join(l.Dir(), "00000000000000000000.index"))
	_, l = openTestManager(t, OSFS{}, dir, cfg)
	if fi, err := os.Stat(filepath.Join(l.Dir(), "00000000000000000000.index")); err != nil || fi.Size() == 0 {
		t.Fatalf("index not rebuilt: %v", err)
	}
	checkEveryOffset(l)
	checkContiguous(t, l)
}

func TestRollByIndexFullAndTime(t *testing.T) {
	cfg := DefaultLogConfig()
	cfg.IndexIntervalBytes = 0
	cfg.SegmentIndexBytes = 3 * indexEntrySize
	_, l := openTestManager(t, OSFS{}, t.TempDir(), cfg)
	for i := 0; i < 20; i++ {
		mustAppend(t, l, plain(1))
	}
	if n := len(l.mu.segments); n < 4 {
		t.Fatalf("index-full roll: %d segments", n)
	}
	checkContiguous(t, l)

	cfg = DefaultLogConfig()
	cfg.SegmentAge = time.Hour
	_, l = openTestManager(t, OSFS{}, t.TempDir(), cfg)
	// segment.ms is measured in record time, as Kafka does: old records
	// together do not roll, a record segment.ms newer than the segment's
	// first one does.
	old := plain(1)
	old.ts = 1000 // 1970: far older than segment.ms
	mustAppend(t, l, old)
	mustAppend(t, l, old)
	if n := len(l.mu.segments); n != 1 {
		t.Fatalf("old records rolled: %d segments", n)
	}
	mustAppend(t, l, plain(1))
	if n := len(l.mu.segments); n != 2 {
		t.Fatalf("time roll: %d segments", n)
	}
	mustAppend(t, l, plain(1))
	if n := len(l.mu.segments); n != 2 {
		t.Fatalf("no roll expected for recent records: %d segments", n)
	}
}

func TestRead(t *testing.T) {
	_, l := openTestManager(t, OSFS{}, t.TempDir(), smallConfig())
	var sizes []int
	for i := 0; i < 10; i++ { // batches of 3 records: [0,2] [3,5] ... [27,29]
		b := makeBatch(plain(3))
		sizes = append(sizes, len(b))
		if _, err := l.AppendAsLeader(b, AppendOptions{LogAppendTimeMs: -1}); err != nil {
			t.Fatal(err)
		}
	}
	one := sizes[0]
	tests := []struct {
		name      string
		offset    int64
		maxBytes  int
		upper     int64
		minOne    bool
		wantBases []int64
		wantErr   error
	}{
		{"from start", 0, 3 * one, 30, false, []int64{0, 3, 6}, nil},
		{"mid batch", 4, 2 * one, 30, false, []int64{3, 6}, nil},
		{"maxBytes below one batch", 0, one - 1, 30, false, nil, nil},
		{"minOneBatch", 0, 1, 30, true, []int64{0}, nil},
		{"minOneBatch zero budget", 7, 0, 30, true, []int64{6}, nil},
		{"upper bound", 0, 1 << 20, 9, false, []int64{0, 3, 6}, nil},
		{"at upper bound", 9, 1 << 20, 9, true, nil, nil},
		{"at LEO", 30, 1 << 20, 30, true, nil, nil},
		{"past LEO", 31, 1 << 20, 30, true, nil, ErrOffsetOutOfRange},
		{"negative", -1, 1 << 20, 30, true, nil, ErrOffsetOutOfRange},
		{"all across segments", 0, 1 << 20, 30, false, []int64{0, 3, 6, 9, 12, 15, 18, 21, 24, 27}, nil},
		{"tail", 28, 1 << 20, 30, false, []int64{27}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data, err := l.Read(tc.offset, tc.maxBytes, tc.upper, tc.minOne)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			var bases []int64
			for len(data) > 0 {
				b, rest, err := record.Parse(data)
				if err != nil {
					t.Fatal(err)
				}
				bases = append(bases, b.BaseOffset())
				data = rest
			}
			if len(bases) > 0 && tc.maxBytes > 0 && !tc.minOne && len(bases)*one > tc.maxBytes {
				t.Fatalf("read more than maxBytes")
			}
			if !equalInt64s(bases, tc.wantBases) {
				t.Fatalf("bases %v, want %v", bases, tc.wantBases)
			}
		})
	}
}

func equalInt64s(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestOffsetForTimestamp(t *testing.T) {
	_, l := openTestManager(t, OSFS{}, t.TempDir(), smallConfig())
	for i := 0; i < 5; i++ { // batch i: offsets 4i..4i+3, timestamps 100i..100i+3
		s := plain(4)
		s.ts = int64(100 * i)
		mustAppend(t, l, s)
	}
	tests := []struct {
		ts, wantOff, wantTs int64
		found               bool
	}{
		{0, 0, 0, true},
		{2, 2, 2, true},
		{150, 8, 200, true},
		{303, 15, 303, true},
		{404, 0, 0, false},
	}
	for _, tc := range tests {
		off, ts, found, err := l.OffsetForTimestamp(tc.ts)
		if err != nil || found != tc.found || (found && (off != tc.wantOff || ts != tc.wantTs)) {
			t.Errorf("OffsetForTimestamp(%d) = %d, %d, %v, %v; want %d, %d, %v",
				tc.ts, off, ts, found, err, tc.wantOff, tc.wantTs, tc.found)
		}
	}
}
