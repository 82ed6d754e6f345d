package integrity

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kbroker/kbroker/wire/record"
)

// batch returns a valid uncompressed batch of one record at base.
func batch(t testing.TB, base int64, value int) []byte {
	t.Helper()
	b, err := record.Build(record.BatchSpec{BaseOffset: base, BaseTimestamp: 1, PartitionLeaderEpoch: 0,
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]record.Record{{Value: bytes.Repeat([]byte{'v'}, value)}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// segment is n one-record batches from base.
func segment(t testing.TB, base int64, n, value int) ([]byte, []int64) {
	var data []byte
	var pos []int64
	for i := range n {
		pos = append(pos, int64(len(data)))
		data = append(data, batch(t, base+int64(i), value)...)
	}
	return data, pos
}

// TestScrubberVerify: the scrubber finds what a disk can do to a closed
// segment, and reports only what a recheck under the log's lock confirms.
func TestScrubberVerify(t *testing.T) {
	for _, tc := range []struct {
		name       string
		damage     func(data []byte, pos []int64) []byte
		confirm    bool // what Recheck answers
		wantOffset int64
		wantFound  int64
	}{
		{"healthy", func(d []byte, _ []int64) []byte { return d }, true, -1, 0},
		{"flipped bit in a record", func(d []byte, p []int64) []byte { d[p[3]+record.HeaderSize+2] ^= 1; return d }, true, 103, 1},
		{"flipped bit in the CRC", func(d []byte, p []int64) []byte { d[p[1]+17] ^= 0x80; return d }, true, 101, 1},
		{"offsets going backwards", func(d []byte, p []int64) []byte {
			binary.BigEndian.PutUint64(d[p[2]:], 100)
			return d
		}, true, 102, 1},
		{"length past the end", func(d []byte, p []int64) []byte {
			binary.BigEndian.PutUint32(d[p[4]+8:], 1<<30)
			return d
		}, true, 104, 1},
		{"not confirmed (changed under the scrub)", func(d []byte, p []int64) []byte { d[p[0]+record.HeaderSize] ^= 1; return d }, false, 100, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, pos := segment(t, 100, 6, 100)
			data = tc.damage(data, pos)
			var rechecked []int64
			s := NewScrubber(func() []Segment {
				return []Segment{{Path: "p/00000000000000000100.log", Base: 100, Size: int64(len(data)), File: bytes.NewReader(data),
					Recheck: func(off int64) bool { rechecked = append(rechecked, off); return tc.confirm }}}
			}, nil)
			s.SetRate(1 << 40)
			if !s.pass(context.Background()) {
				t.Fatal("pass cut short")
			}
			if tc.wantOffset < 0 && len(rechecked) != 0 || tc.wantOffset >= 0 && (len(rechecked) != 1 || rechecked[0] != tc.wantOffset) {
				t.Fatalf("rechecked %v, want offset %d", rechecked, tc.wantOffset)
			}
			if _, _, found := s.Stats(); found != tc.wantFound {
				t.Fatalf("found %d, want %d", found, tc.wantFound)
			}
		})
	}
}

// TestScrubberRate: Run keeps to the rate, stops at once when it is set
// to 0 and when its context ends, and passes no oftener than the pass
// interval.
func TestScrubberRate(t *testing.T) {
	data, _ := segment(t, 0, 64, 1000) // ~68 KB
	var listed atomic.Int64
	s := NewScrubber(func() []Segment {
		listed.Add(1)
		return []Segment{{Path: "s.log", Size: int64(len(data)), File: bytes.NewReader(data)}}
	}, nil)
	const rate = 256 << 10
	s.SetRate(rate)
	s.SetPassInterval(time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	start := time.Now()
	wg.Go(func() { s.Run(ctx) })
	for _, passes, _ := s.Stats(); passes == 0; _, passes, _ = s.Stats() {
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	if min := time.Duration(float64(len(data)) / rate * float64(time.Second)); elapsed < min*9/10 {
		t.Fatalf("a pass of %d bytes at %d B/s took %v, want >= %v", len(data), rate, elapsed, min)
	}
	time.Sleep(50 * time.Millisecond)
	if n := listed.Load(); n != 1 {
		t.Fatalf("%d passes started within the pass interval", n)
	}
	s.SetRate(0)
	s.SetPassInterval(0)
	time.Sleep(20 * time.Millisecond)
	if n := listed.Load(); n != 1 {
		t.Fatalf("scrubbing with the rate at 0: %d passes", n)
	}
	s.SetRate(1 << 40)
	for listed.Load() < 3 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	wg.Wait()
}

func TestReportsCountOnce(t *testing.T) {
	r := NewReports()
	e := &CorruptBatchError{Segment: "a.log", Position: 10, Offset: 5, Reason: "CRC"}
	for range 3 {
		r.Add(e)
	}
	r.Add(&CorruptBatchError{Segment: "b.log", Position: 0})
	if r.Count() != 2 {
		t.Fatalf("count %d, want 2", r.Count())
	}
	select {
	case <-r.Signal():
	default:
		t.Fatal("not signalled")
	}
	got := r.Take()
	if len(got) != 2 || got[0].Segment != "a.log" || !errors.Is(got[0], ErrCorrupt) || !errors.Is(got[0], ErrCorruptSegment) {
		t.Fatalf("took %+v", got)
	}
	r.Add(e) // found again after the Take: reported again, not counted again
	if len(r.Take()) != 1 || r.Count() != 2 {
		t.Fatalf("count %d after a second sighting", r.Count())
	}
	var nilReports *Reports
	nilReports.Add(e) // a log without a Manager
}
