package storage

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/storage/logfs"
	"github.com/kbroker/kbroker/wire/record"
)

// flipByte XORs one byte of a file, as a bad sector or controller does.
func flipByte(t testing.TB, path string, pos int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, pos); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x10
	if _, err := f.WriteAt(b, pos); err != nil {
		t.Fatal(err)
	}
}

// corruptLog builds a log of 6 batches of 3 records in two segments
// (offsets 0-8 in the first, closed one; 9-17 in the active one) and
// returns the manager, the log and each batch's position in its segment.
func corruptLog(t *testing.T) (*Manager, *Log, []int64) {
	t.Helper()
	cfg := DefaultLogConfig()
	cfg.SegmentBytes = 3 * int64(len(makeBatch(plain(3))))
	m, l := openTestManager(t, OSFS{}, t.TempDir(), cfg)
	t.Cleanup(func() { m.Close() })
	var pos []int64
	for range 6 {
		p := int64(0)
		if n := len(pos); n%3 != 0 {
			p = pos[n-1] + int64(len(makeBatch(plain(3))))
		}
		mustAppend(t, l, plain(3))
		pos = append(pos, p)
	}
	if n := len(segmentFiles(t, l.Dir())); n != 2 {
		t.Fatalf("%d segments, want 2", n)
	}
	return m, l, pos
}

// TestReadRefusesCorruptBatch: a stored batch whose CRC fails is never
// served, to a consumer (upper bound the high watermark) or a follower
// (no bound); the error names the segment, the position and the offset
// to refetch from, wraps ErrCorrupt, and is counted once however often
// it is read. Batches before it, and reads that stop before it, are
// served.
func TestReadRefusesCorruptBatch(t *testing.T) {
	bodyByte := int64(record.HeaderSize + 3) // inside the first record
	for _, tc := range []struct {
		name       string
		batch      int   // which batch to damage (0-5)
		at         int64 // byte within it
		readAt     int64
		maxBytes   int
		wantErr    bool
		wantOffset int64
		wantReason string
	}{
		{"consumer read of the damaged batch", 1, bodyByte, 3, 1 << 20, true, 3, "CRC mismatch"},
		{"read from inside it", 1, bodyByte, 4, 1 << 20, true, 4, "CRC mismatch"},
		{"read before it reaching it", 1, bodyByte, 0, 1 << 20, true, 3, "CRC mismatch"},
		{"read before it stopping short", 1, bodyByte, 0, 100, false, 0, ""},
		{"read after it", 1, bodyByte, 6, 1 << 20, false, 0, ""},
		{"active segment", 4, bodyByte, 9, 1 << 20, true, 12, "CRC mismatch"},
		{"damaged CRC field", 2, 17, 6, 1 << 20, true, 6, "CRC mismatch"},
		{"damaged batch length", 1, 9, 3, 1 << 20, true, 3, "bad batch size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, l, pos := corruptLog(t)
			seg := logfs.FileName(l.Dir(), int64(tc.batch/3)*9, logfs.LogSuffix)
			flipByte(t, seg, pos[tc.batch]+tc.at)
			for _, upper := range []int64{l.LogEndOffset(), math.MaxInt64} { // consumer, follower
				for range 3 {
					_, err := l.Read(tc.readAt, tc.maxBytes, upper, true)
					if !tc.wantErr {
						if err != nil {
							t.Fatalf("read at %d: %v", tc.readAt, err)
						}
						continue
					}
					var ce *CorruptBatchError
					if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) || !errors.Is(err, ErrCorruptSegment) {
						t.Fatalf("read at %d: %v, want a CorruptBatchError", tc.readAt, err)
					}
					if ce.Segment != seg || ce.Position != pos[tc.batch] || ce.Offset != tc.wantOffset || !contains(ce.Reason, tc.wantReason) {
						t.Fatalf("error %+v, want segment %s position %d offset %d reason %q", ce, seg, pos[tc.batch], tc.wantOffset, tc.wantReason)
					}
				}
			}
			want := int64(0)
			if tc.wantErr {
				want = 1
			}
			if got := m.Corruptions().Count(); got != want {
				t.Fatalf("corrupt batches counted %d, want %d", got, want)
			}
			reports := m.Corruptions().Take()
			if int64(len(reports)) != want {
				t.Fatalf("%d reports, want %d", len(reports), want)
			}
			if !tc.wantErr {
				return
			}
			// The repair a follower makes: truncate to the reported
			// offset, then the log reads clean and takes appends.
			if err := l.TruncateTo(reports[0].Offset); err != nil {
				t.Fatal(err)
			}
			if l.LogEndOffset() > int64(tc.batch*3) {
				t.Fatalf("log end offset %d after the repair, want <= %d", l.LogEndOffset(), tc.batch*3)
			}
			checkContiguous(t, l)
			mustAppend(t, l, plain(3))
			checkContiguous(t, l)
		})
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// TestScrubberFindsCorruptBatch: the scrubber run by Manager.Run finds a
// flipped bit in a closed segment nobody reads, reports it as a read
// would, and a log appended to, rolled and truncated under it gives no
// false report.
func TestScrubberFindsCorruptBatch(t *testing.T) {
	m, l, pos := corruptLog(t)
	m.SetScrubRate(64 << 20)
	m.scrubber.SetPassInterval(10 * time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { m.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()

	// A busy log: appends, rolls and truncations under the scrub.
	busy, err := m.GetOrCreate("busy", 0, func() LogConfig { c := DefaultLogConfig(); c.SegmentBytes = 600; return c }())
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		mustAppend(t, busy, plain(2))
		if i%20 == 19 {
			if err := busy.TruncateTo(busy.LogEndOffset() - 10); err != nil {
				t.Fatal(err)
			}
		}
		if _, passes, _ := m.ScrubStats(); passes >= 5 {
			break
		}
	}
	if n := m.Corruptions().Count(); n != 0 {
		t.Fatalf("%d corrupt batches reported on a healthy log: %+v", n, m.Corruptions().Take())
	}

	flipByte(t, logfs.FileName(l.Dir(), 0, logfs.LogSuffix), pos[2]+record.HeaderSize+1)
	for m.Corruptions().Count() == 0 {
		if time.Now().After(deadline.Add(5 * time.Second)) {
			t.Fatal("the scrubber did not find the corrupt batch")
		}
		time.Sleep(5 * time.Millisecond)
	}
	r := m.Corruptions().Take()
	if len(r) != 1 || r[0].Position != pos[2] || r[0].Offset != 6 || filepath.Dir(r[0].Segment) != l.Dir() {
		t.Fatalf("reports %+v, want position %d offset 6 in %s", r, pos[2], l.Dir())
	}
	if _, _, found := m.ScrubStats(); found != 1 {
		t.Fatalf("scrubber found %d", found)
	}
	// The active segment is never scrubbed (it is being written).
	flipByte(t, logfs.FileName(l.Dir(), 9, logfs.LogSuffix), pos[4]+record.HeaderSize+1)
	_, p0, _ := m.ScrubStats()
	for _, p, _ := m.ScrubStats(); p < p0+3; _, p, _ = m.ScrubStats() {
		time.Sleep(5 * time.Millisecond)
	}
	if n := m.Corruptions().Count(); n != 1 {
		t.Fatalf("%d corrupt batches counted, want 1", n)
	}
}
