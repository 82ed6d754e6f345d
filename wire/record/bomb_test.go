package record

import (
	"bytes"
	"errors"
	"runtime"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// TestDecompressionBomb: 100 MiB of zeros compress to a few KiB with every
// codec. With a 1 MiB limit, Iterate and Decompress must refuse them
// without allocating anywhere near 100 MiB.
func TestDecompressionBomb(t *testing.T) {
	if testing.Short() {
		t.Skip("compresses 100 MiB per codec")
	}
	const (
		bombSize = 100 << 20
		limit    = 1 << 20
		// Output up to the limit, plus the codecs' own buffers (lz4's
		// 4 MiB blocks are the largest), stays far below the bomb.
		maxAlloc = 24 << 20
	)
	zeros := make([]byte, bombSize)
	record := Record{Value: zeros}
	type bomb struct {
		name string
		run  func() error
	}
	var bombs []bomb
	for _, codec := range allCodecs[1:] {
		b, err := Build(BatchSpec{Attributes: int16(codec)}, []Record{record})
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > bombSize/10 { // snappy manages about 20:1

			t.Fatalf("%s: bomb is %d bytes", codec, len(b))
		}
		bombs = append(bombs,
			bomb{codec.String() + "/Iterate", func() error { return Validate(b, limit) }},
			bomb{codec.String() + "/Decompress", func() error {
				_, err := Decompress(codec, b.Records(), limit)
				return err
			}})
	}
	xerial := xerialFrame(zeros, 1<<20)
	bombs = append(bombs, bomb{"snappy-xerial/Decompress", func() error {
		_, err := Decompress(CodecSnappy, xerial, limit)
		return err
	}})
	// A streamed zstd frame does not declare its content size, so the
	// decoder cannot refuse it from the header.
	zstdStream := zstdStreamEncode(t, zeros)
	bombs = append(bombs, bomb{"zstd-stream/Decompress", func() error {
		_, err := Decompress(CodecZstd, zstdStream, limit)
		return err
	}})
	// zeros and record are dead from here on (no closure holds them), so
	// the GC frees them; the measurements count allocations (TotalAlloc),
	// not what is live, anyway.

	for _, bb := range bombs {
		t.Run(bb.name, func(t *testing.T) {
			_ = bb.run() // warm pools so that only per-call allocation is measured
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			err := bb.run()
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("got %v, want ErrTooLarge", err)
			}
			alloc := after.TotalAlloc - before.TotalAlloc
			if alloc > maxAlloc {
				t.Fatalf("allocated %d bytes refusing a bomb", alloc)
			}
			t.Logf("allocated %d bytes", alloc)
		})
	}
}

// TestZstdDeclaredHugeFrame: a cold decoder must not size its buffers from
// what the frame header claims.
func TestZstdDeclaredHugeFrame(t *testing.T) {
	// A frame that declares 100 MiB of content (EncodeAll writes the
	// content size) must still be refused at the limit.
	c, err := Compress(CodecZstd, nil, make([]byte, 100<<20))
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err = Decompress(CodecZstd, c, 1<<16)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 24<<20 {
		t.Fatalf("allocated %d bytes", alloc)
	}
}

// TestZstdHugeWindow: a tiny frame that declares a 128 MiB window (no
// content size) is refused before the decoder allocates the window; one
// declaring zstdMaxWindow is decoded.
func TestZstdHugeWindow(t *testing.T) {
	content := []byte("hello")
	frame := func(windowLog byte) []byte {
		f := []byte{0x28, 0xb5, 0x2f, 0xfd, // magic
			0x00,                  // no content size, not single segment, no checksum
			(windowLog - 10) << 3, // window descriptor
		}
		bh := uint32(len(content))<<3 | 1 // last block, raw
		f = append(f, byte(bh), byte(bh>>8), byte(bh>>16))
		return append(f, content...)
	}
	for _, tc := range []struct {
		windowLog byte
		ok        bool
	}{{27, false}, {23, true}} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		out, err := Decompress(CodecZstd, frame(tc.windowLog), 1<<20)
		runtime.ReadMemStats(&after)
		if tc.ok && (err != nil || string(out) != "hello") {
			t.Fatalf("windowLog %d: got %q, %v", tc.windowLog, out, err)
		}
		if !tc.ok && !errors.Is(err, ErrTooLarge) {
			t.Fatalf("windowLog %d: got %v, want ErrTooLarge", tc.windowLog, err)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 2*zstdBudget {
			t.Fatalf("windowLog %d: allocated %d bytes for a 5-byte frame", tc.windowLog, alloc)
		}
	}
}

// zstdStreamEncode compresses src with the stream encoder, which, like
// zstd-jni in Kafka's Java producer, leaves the content size out.
func zstdStreamEncode(t testing.TB, src []byte) []byte {
	var buf bytes.Buffer
	w, err := zstd.NewWriter(&buf, zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	for len(src) > 0 {
		n := min(len(src), 1<<20)
		if _, err := w.Write(src[:n]); err != nil {
			t.Fatal(err)
		}
		src = src[n:]
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var h zstd.Header
	if err := h.Decode(buf.Bytes()); err != nil || h.HasFCS {
		t.Fatalf("stream frame header: %+v, %v", h, err)
	}
	return buf.Bytes()
}

// TestZstdStreamGrowth: without a declared size, the output room grows
// until the frame fits.
func TestZstdStreamGrowth(t *testing.T) {
	src := bytes.Repeat([]byte("grow me "), 200_000) // 1.6 MB, compresses well
	frame := zstdStreamEncode(t, src)
	for _, prefix := range [][]byte{nil, []byte("pre")} {
		out, err := decompressAppend(prefix, CodecZstd, frame, len(src))
		if err != nil || !bytes.Equal(out[len(prefix):], src) || !bytes.Equal(out[:len(prefix)], prefix) {
			t.Fatalf("prefix %q: %v", prefix, err)
		}
	}
	if _, err := Decompress(CodecZstd, frame, len(src)-1); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("limit-1: %v", err)
	}
}
