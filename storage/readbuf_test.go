package storage

import (
	"bytes"
	"testing"

	"github.com/kbroker/kbroker/wire"
)

// TestReadPooled checks that ReadPooled returns what Read returns, within
// a segment, across segments (the joined buffer) and for a first batch
// over the budget, and that Release poisons what it gave back (test
// binaries poison, wire.PutBuf), so a use after Release cannot pass for
// records.
func TestReadPooled(t *testing.T) {
	_, l := openTestManager(t, OSFS{}, t.TempDir(), smallConfig()) // 4 KiB segments
	for i := range 60 {
		mustAppend(t, l, plain(i%7+1))
	}
	big := mustAppend(t, l, spec{n: 40, valueSize: 100, pid: -1, epoch: -1, seq: -1, ts: testNow}) // > 4 KiB
	leo := l.LogEndOffset()
	for _, tc := range []struct {
		name        string
		offset      int64
		maxBytes    int
		upperBound  int64
		minOneBatch bool
	}{
		{"within a segment", 3, 300, leo, true},
		{"across segments", 0, 1 << 20, leo, true},
		{"below an upper bound", 5, 1 << 20, 40, true},
		{"first batch over the budget", big.FirstOffset, 10, leo, true},
		{"nothing fits", 0, 10, leo, false},
		{"at the log end", leo, 1 << 20, leo, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := l.Read(tc.offset, tc.maxBytes, tc.upperBound, tc.minOneBatch)
			if err != nil {
				t.Fatal(err)
			}
			var bufs ReadBuffers
			got, err := l.ReadPooled(tc.offset, tc.maxBytes, tc.upperBound, tc.minOneBatch, &bufs)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("ReadPooled gave %d bytes, Read %d, or other bytes", len(got), len(want))
			}
			bufs.Release()
			if bufs.Len() != 0 {
				t.Fatalf("%d buffers held after Release", bufs.Len())
			}
			if len(got) > 0 && wire.Poisoning() && !bytes.Equal(got, bytes.Repeat([]byte{wire.PoisonByte}, len(got))) {
				t.Fatal("released records not poisoned")
			}
		})
	}
}

// TestReadPooledReuses checks that a buffer given back is taken again, so
// a fetch after the first costs no allocation for its records.
func TestReadPooledReuses(t *testing.T) {
	_, l := openTestManager(t, OSFS{}, t.TempDir(), DefaultLogConfig())
	mustAppend(t, l, plain(10))
	var bufs ReadBuffers
	read := func() {
		if _, err := l.ReadPooled(0, 1<<20, l.LogEndOffset(), true, &bufs); err != nil {
			t.Fatal(err)
		}
		bufs.Release()
	}
	read()
	// The pools of a race build drop some Puts on purpose, so the count
	// is bounded, not zero.
	if got := testing.AllocsPerRun(100, read); got > 1 {
		t.Errorf("%.1f allocations per pooled read, want <= 1", got)
	}
}
