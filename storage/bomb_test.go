package storage

import (
	"encoding/binary"
	"errors"
	"math"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/wire/record"
)

// zstdDeclaredBomb is the 79-byte produce from the report: a one-record
// zstd batch whose frame declares 1e11 bytes of content.
func zstdDeclaredBomb() record.Batch {
	frame := []byte{0x28, 0xb5, 0x2f, 0xfd, 3 << 6, (20 - 10) << 3} // 8-byte content size, 1 MiB window
	frame = binary.LittleEndian.AppendUint64(frame, 1e11)
	const block = 128<<10<<3 | 1<<1 | 1 // 128 KiB, RLE, last
	frame = append(frame, byte(block&0xff), byte(block>>8&0xff), byte(block>>16), 0)
	b := make([]byte, record.HeaderSize, record.HeaderSize+len(frame))
	b = append(b, frame...)
	be := binary.BigEndian
	be.PutUint32(b[8:], uint32(len(b)-record.LogOverhead))
	be.PutUint32(b[12:], 0xffffffff)
	b[16] = record.MagicV2
	be.PutUint16(b[21:], uint16(record.CodecZstd))
	be.PutUint64(b[27:], uint64(testNow))
	be.PutUint64(b[35:], uint64(testNow))
	be.PutUint64(b[43:], math.MaxUint64) // producer id -1
	be.PutUint16(b[51:], math.MaxUint16)
	be.PutUint32(b[53:], math.MaxUint32)
	be.PutUint32(b[57:], 1)
	record.Batch(b).SetCRC()
	return b
}

// TestAppendDecompressionBomb: the 79-byte zstd batch declaring 1e11
// bytes is refused as INVALID_RECORD (see appendError) before anything is
// decompressed, even on a topic whose max.message.bytes predates the
// bound (MaxInt32, so 64 × it is far past the 1e11 declared): the
// absolute ceiling applies. Nothing is appended.
func TestAppendDecompressionBomb(t *testing.T) {
	b := zstdDeclaredBomb()
	if len(b) != 79 {
		t.Fatalf("bomb is %d bytes", len(b))
	}
	for _, maxMessageBytes := range []int{1048588, math.MaxInt32} {
		cfg := smallConfig()
		cfg.MaxMessageBytes = maxMessageBytes
		_, l := openTestManager(t, OSFS{}, t.TempDir(), cfg)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := l.AppendAsLeader(append(record.Batch(nil), b...), AppendOptions{LogAppendTimeMs: -1})
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrInvalidRecord) || !errors.Is(err, record.ErrTooLarge) {
			t.Fatalf("max.message.bytes %d: got %v, want ErrInvalidRecord wrapping record.ErrTooLarge", maxMessageBytes, err)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
			t.Fatalf("allocated %d bytes refusing the bomb", alloc)
		}
		if l.LogEndOffset() != 0 {
			t.Fatalf("log end offset %d after a refused batch", l.LogEndOffset())
		}
	}
}

// TestDecompressionLimit documents the limit: 64 × max.message.bytes,
// capped by record.MaxDecompressedBatchBytes.
func TestDecompressionLimit(t *testing.T) {
	for _, tc := range []struct{ mmb, want int }{
		{1048588, 64 * 1048588},
		{100 << 20, record.MaxDecompressedBatchBytes},
		{math.MaxInt32, record.MaxDecompressedBatchBytes},
		{0, 0},
	} {
		if got := decompressionLimit(tc.mmb); got != tc.want {
			t.Errorf("decompressionLimit(%d) = %d, want %d", tc.mmb, got, tc.want)
		}
	}
}

// expandingBatch is a valid zstd batch of a few KiB holding one record of
// size zero bytes, as a producer would send it.
func expandingBatch(t testing.TB, size int) record.Batch {
	b, err := record.Build(record.BatchSpec{Attributes: int16(record.CodecZstd), BaseTimestamp: testNow,
		PartitionLeaderEpoch: -1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]record.Record{{Value: make([]byte, size)}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestParallelBombsHeap is the memory-amplification report: 16 producers
// at once each sending a batch of a few KiB that expands to (almost)
// 64 MiB. The leader scans them through a small window (the codec is
// kept) or, when the topic recompresses, streams them into the new codec
// within the decompression budget, so the heap stays far below
// 16 × 64 MiB. Peak HeapAlloc is sampled with runtime.ReadMemStats.
func TestParallelBombsHeap(t *testing.T) {
	const (
		producers = 16
		maxHeap   = 512 << 20
	)
	// Just under the 64 MiB limit of the default max.message.bytes, so
	// the batches are valid and validated to the end.
	b := expandingBatch(t, decompressionLimit(1048588)-64)
	t.Logf("batch of %d bytes expanding to %d", len(b), decompressionLimit(1048588)-64)
	for _, tc := range []struct {
		name        string
		compression string
		producers   int
	}{
		{"codec kept (scan)", "producer", producers},
		// A rebuild holds the record and the batch being built (a
		// 137 MiB share of the 256 MiB budget), so the budget runs
		// them one at a time; two show that as well as sixteen, in an
		// eighth of the time.
		{"recompressed to lz4 (rebuild)", "lz4", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultLogConfig()
			cfg.CompressionType = tc.compression
			runtime.GC()
			var base runtime.MemStats
			runtime.ReadMemStats(&base)
			peak := sampleHeap(t, func() {
				var wg sync.WaitGroup
				errs := make(chan error, tc.producers)
				for i := 0; i < tc.producers; i++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						_, _, err := validateForAppend(append(record.Batch(nil), b...), &cfg, time.UnixMilli(testNow))
						errs <- err
					}()
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					if err != nil {
						t.Error(err)
					}
				}
			})
			t.Logf("peak heap %d MiB (%d MiB before) for %d parallel validations of 64 MiB-expanding batches",
				peak>>20, base.HeapAlloc>>20, tc.producers)
			if peak > maxHeap {
				t.Fatalf("peak heap %d bytes, want < %d", peak, maxHeap)
			}
		})
	}
}

// sampleHeap runs f while sampling HeapAlloc, and returns the peak seen.
func sampleHeap(t *testing.T, f func()) uint64 {
	t.Helper()
	done := make(chan struct{})
	peakc := make(chan uint64)
	go func() {
		var peak uint64
		var ms runtime.MemStats
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
			select {
			case <-done:
				peakc <- peak
				return
			case <-tick.C:
			}
		}
	}()
	f()
	close(done)
	return <-peakc
}
