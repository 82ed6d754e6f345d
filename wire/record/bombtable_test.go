package record

import (
	"encoding/binary"
	"errors"
	"runtime"
	"testing"

	"github.com/klauspost/compress/snappy"
)

// zstdFrameHeader is a zstd frame header (no checksum) declaring fcs
// bytes of content when fcs >= 0, with a 1 MiB window unless
// singleSegment (then the window is the content size).
func zstdFrameHeader(fcs int64, singleSegment bool) []byte {
	f := []byte{0x28, 0xb5, 0x2f, 0xfd}
	var fhd byte
	if fcs >= 0 {
		fhd |= 3 << 6 // 8-byte content size
	}
	if singleSegment {
		fhd |= 1 << 5
	}
	f = append(f, fhd)
	if !singleSegment {
		f = append(f, (20-10)<<3) // windowLog 20
	}
	if fcs >= 0 {
		f = binary.LittleEndian.AppendUint64(f, uint64(fcs))
	}
	return f
}

// zstdRLEBlock is a zstd block repeating b n times (n <= 128 KiB).
func zstdRLEBlock(b byte, n int, last bool) []byte {
	h := uint32(n)<<3 | 1<<1 // RLE
	if last {
		h |= 1
	}
	return []byte{byte(h), byte(h >> 8), byte(h >> 16), b}
}

// zstdRawBlock is a zstd block holding data as is.
func zstdRawBlock(data []byte, last bool) []byte {
	h := uint32(len(data)) << 3
	if last {
		h |= 1
	}
	return append([]byte{byte(h), byte(h >> 8), byte(h >> 16)}, data...)
}

// compressedBatch wraps a compressed records section in a one-record
// batch header with a valid CRC.
func compressedBatch(codec Codec, section []byte) Batch {
	b := rawBatch(1, 0, section)
	binary.BigEndian.PutUint16(b[attributesOffset:], uint16(codec))
	b.SetCRC()
	return b
}

// zstdValueBomb is a zstd batch of a few KiB holding one valid record
// whose value is size zero bytes, written as RLE blocks: it expands about
// 32000-fold, with no content size in its header.
func zstdValueBomb(size int) Batch {
	var rec []byte
	rec = append(rec, 0)                        // attributes
	rec = binary.AppendVarint(rec, 0)           // timestamp delta
	rec = binary.AppendVarint(rec, 0)           // offset delta
	rec = binary.AppendVarint(rec, -1)          // null key
	rec = binary.AppendVarint(rec, int64(size)) // value length
	length := len(rec) + size + varintSize(0)   // + header count
	prefix := binary.AppendVarint(nil, int64(length))
	frame := zstdFrameHeader(-1, false)
	frame = append(frame, zstdRawBlock(append(prefix, rec...), false)...)
	for left := size; left > 0; {
		n := min(left, 128<<10)
		frame = append(frame, zstdRLEBlock(0, n, false)...)
		left -= n
	}
	frame = append(frame, zstdRawBlock(binary.AppendVarint(nil, 0), true)...) // no headers
	return compressedBatch(CodecZstd, frame)
}

// TestZstdDeclaredBomb is the 79-byte batch from the report: a zstd frame
// declaring 1e11 bytes of content. It is refused from the frame header,
// allocating nothing near the declared size, with every reader.
func TestZstdDeclaredBomb(t *testing.T) {
	frame := append(zstdFrameHeader(1e11, false), zstdRLEBlock(0, 128<<10, true)...)
	b := compressedBatch(CodecZstd, frame)
	if len(b) != 79 {
		t.Fatalf("bomb is %d bytes, want 79", len(b))
	}
	// The same with a single-segment frame, whose window is the
	// declared size.
	single := compressedBatch(CodecZstd, append(zstdFrameHeader(64<<20, true), zstdRLEBlock(0, 128<<10, true)...))
	for _, bb := range []struct {
		name  string
		batch Batch
		limit int
	}{
		{"1e11 declared", b, 1 << 62},
		{"single segment 64 MiB", single, 128 << 20},
	} {
		for name, run := range readers(bb.batch, bb.limit) {
			t.Run(bb.name+"/"+name, func(t *testing.T) {
				alloc, err := allocated(run)
				if !errors.Is(err, ErrTooLarge) {
					t.Fatalf("got %v, want ErrTooLarge", err)
				}
				if alloc > 1<<20 {
					t.Fatalf("allocated %d bytes", alloc)
				}
			})
		}
	}
}

// readers are every way the package reads a batch's records.
func readers(b Batch, limit int) map[string]func() error {
	noop := func(*Record) error { return nil }
	return map[string]func() error{
		"Iterate": func() error { return Iterate(b, limit, noop) },
		"Scan":    func() error { return Scan(b, limit, noop) },
		"Rebuild": func() error { _, err := Rebuild(b, CodecLZ4, limit, noop); return err },
		"Decompress": func() error {
			_, err := Decompress(b.Codec(), b.Records(), limit)
			return err
		},
	}
}

// allocated runs f once to warm pools, then again, returning the bytes
// the second run allocated.
func allocated(f func() error) (uint64, error) {
	_ = f()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	err := f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, err
}

// TestBombTable: for every codec, a batch that expands 16-fold past a
// 1 MiB limit is refused (ErrTooLarge) by every reader without allocating
// near the bomb's size, and hand-made inputs that declare sizes they do
// not hold allocate nothing from the declaration.
func TestBombTable(t *testing.T) {
	const (
		limit    = 1 << 20
		bombSize = 16 << 20
	)
	zeros := make([]byte, bombSize)
	type bomb struct {
		name     string
		batch    Batch
		maxAlloc uint64
		want     error
	}
	var bombs []bomb
	for _, codec := range allCodecs[1:] {
		b, err := Build(BatchSpec{Attributes: int16(codec)}, []Record{{Value: zeros}})
		if err != nil {
			t.Fatal(err)
		}
		// Iterate and Rebuild may hold up to the limit (one record);
		// lz4's 4 MiB blocks are the largest decoder state.
		bombs = append(bombs, bomb{codec.String() + " zeros", b, 12 << 20, ErrTooLarge})
	}
	bombs = append(bombs,
		bomb{"zstd RLE value", zstdValueBomb(bombSize), 12 << 20, ErrTooLarge},
		bomb{"snappy-xerial zeros", compressedBatch(CodecSnappy, xerialFrame(AppendRecord(nil, &Record{Value: zeros}), 1<<20)), 12 << 20, ErrTooLarge},
	)
	// A snappy block that declares 100 MiB in a few bytes is refused
	// for the limit, one declaring the limit as impossible for its size,
	// before anything is allocated for either; and the same in a xerial
	// chunk.
	lying := binary.AppendUvarint(nil, 100<<20)
	lying = append(lying, snappy.Encode(nil, []byte("tiny"))[1:]...)
	bombs = append(bombs,
		bomb{"snappy declared 100 MiB", compressedBatch(CodecSnappy, lying), 1 << 20, ErrTooLarge},
		bomb{"snappy declared under the limit", compressedBatch(CodecSnappy, append(binary.AppendUvarint(nil, limit), lying[4:]...)), 1 << 20, ErrCorrupt},
	)
	xl := append([]byte{}, xerialMagic...)
	xl = binary.BigEndian.AppendUint32(xl, 1)
	xl = binary.BigEndian.AppendUint32(xl, 1)
	xl = binary.BigEndian.AppendUint32(xl, uint32(len(lying)))
	xl = append(xl, lying...)
	bombs = append(bombs, bomb{"snappy-xerial chunk declared 100 MiB", compressedBatch(CodecSnappy, xl), 1 << 20, ErrTooLarge})
	// zeros is dead from here on (no closure holds it); allocated counts
	// allocations, not what is live.

	for _, bb := range bombs {
		for name, run := range readers(bb.batch, limit) {
			t.Run(bb.name+"/"+name, func(t *testing.T) {
				alloc, err := allocated(run)
				if !errors.Is(err, bb.want) {
					t.Fatalf("got %v, want %v", err, bb.want)
				}
				if alloc > bb.maxAlloc {
					t.Fatalf("allocated %d bytes refusing a %d-byte bomb", alloc, len(bb.batch))
				}
			})
		}
	}
}

// TestScanHoldsNoRecord: a valid batch whose one record is 16 MiB of
// zeros (a few KiB of zstd) is accepted by Scan through its small window,
// and by Iterate, which must hold the record.
func TestScanHoldsNoRecord(t *testing.T) {
	b := zstdValueBomb(16 << 20)
	if len(b) > 4096 {
		t.Fatalf("bomb is %d bytes", len(b))
	}
	alloc, err := allocated(func() error { return Scan(b, 32<<20, func(*Record) error { return nil }) })
	if err != nil {
		t.Fatal(err)
	}
	// The scan window and the zstd decoder (pooled, so warm).
	if alloc > 2<<20 {
		t.Fatalf("Scan allocated %d bytes", alloc)
	}
	var got int
	if err := Iterate(b, 32<<20, func(r *Record) error { got = len(r.Value); return nil }); err != nil || got != 16<<20 {
		t.Fatalf("Iterate: value of %d bytes, %v", got, err)
	}
	t.Logf("Scan allocated %d bytes for a %d-byte batch expanding to 16 MiB", alloc, len(b))
}

// TestDecompressionBudgetShares: a decompression holds its share of the
// budget while it runs and returns all of it when done; a scan's share
// is the decoder and a small window, while a full iteration's also
// covers the largest record the batch can expand to.
func TestDecompressionBudgetShares(t *testing.T) {
	b := zstdValueBomb(4 << 20) // a few hundred bytes, 4 MiB decompressed
	const limit = 64 << 20
	free := func(n int64) bool {
		if !budget.TryAcquire(n) {
			return false
		}
		budget.Release(n)
		return true
	}
	for _, tc := range []struct {
		name string
		run  func(fn func(*Record) error) error
		// What must be left while it runs, and what must not be.
		leftAtLeast, leftBelow int64
	}{
		// A scan holds the zstd decoder's share, not the record.
		{"Scan", func(fn func(*Record) error) error { return Scan(b, limit, fn) },
			DecompressionBudget - 16<<20, DecompressionBudget - zstdBudget + 1},
		// An iteration holds the decoder's and the 4 MiB record's
		// (what the batch's few hundred bytes can expand to, not the
		// whole limit).
		{"Iterate", func(fn func(*Record) error) error { return Iterate(b, limit, fn) },
			DecompressionBudget - 32<<20, DecompressionBudget - zstdBudget - 4<<20 + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			err := tc.run(func(*Record) error {
				calls++
				if !free(tc.leftAtLeast) {
					t.Errorf("less than %d bytes of the budget left while running", tc.leftAtLeast)
				}
				if free(tc.leftBelow) {
					t.Errorf("%d bytes of the budget left while running: the share is not held", tc.leftBelow)
				}
				return nil
			})
			if err != nil || calls != 1 {
				t.Fatalf("%d records, %v", calls, err)
			}
			if !free(DecompressionBudget) {
				t.Fatal("the share was not returned")
			}
		})
	}
}
