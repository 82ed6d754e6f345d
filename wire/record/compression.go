package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Decompression is where untrusted bytes can cost the most memory: a few
// kilobytes of zstd or gzip expand to gigabytes. Every codec below is
// therefore driven so that output stops at the caller's limit:
//
//   - gzip, lz4 and zstd are streamed through readLimited, which never
//     grows the output past the limit and reads one byte more to tell
//     "exactly at the limit" from "past it";
//   - snappy blocks declare their decoded size up front, which is checked
//     against the limit before the block is decoded.
//
// Readers and writers are pooled: their internal tables are large, and a
// broker decompresses on every produce.

// Decompress appends the decompressed form of src to a new slice; it fails
// (wrapping ErrTooLarge) as soon as the output would exceed limit bytes,
// and with an error wrapping ErrCorrupt when src is not valid for codec.
func Decompress(codec Codec, src []byte, limit int) ([]byte, error) {
	return decompressAppend(nil, codec, src, limit)
}

func decompressAppend(dst []byte, codec Codec, src []byte, limit int) ([]byte, error) {
	limit = max(limit, 0)
	var err error
	switch codec {
	case CodecNone:
		if len(src) > limit {
			return dst, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(src), limit)
		}
		return append(dst, src...), nil
	case CodecGzip:
		dst, err = gunzip(dst, src, limit)
	case CodecSnappy:
		dst, err = unsnappy(dst, src, limit)
	case CodecLZ4:
		dst, err = unlz4(dst, src, limit)
	case CodecZstd:
		dst, err = unzstd(dst, src, limit)
	default:
		return dst, fmt.Errorf("%w: unknown compression codec %d", ErrCorrupt, codec)
	}
	if err != nil && !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrCorrupt) {
		err = fmt.Errorf("%w: %s: %w", ErrCorrupt, codec, err)
	}
	return dst, err
}

// readLimited appends everything r yields to dst, failing with ErrTooLarge
// when it yields more than limit bytes. dst grows geometrically but never
// beyond limit bytes past its starting length.
func readLimited(dst []byte, r io.Reader, limit int) ([]byte, error) {
	start := len(dst)
	for {
		written := len(dst) - start
		if written >= limit {
			var probe [1]byte
			n, err := io.ReadFull(r, probe[:])
			if n > 0 {
				return dst, fmt.Errorf("%w: limit %d", ErrTooLarge, limit)
			}
			if err == io.EOF {
				return dst, nil
			}
			return dst, err
		}
		if len(dst) == cap(dst) {
			dst = slices.Grow(dst, min(max(written, 4096), limit-written))
		}
		window := dst[len(dst):min(cap(dst), start+limit)]
		n, err := r.Read(window)
		dst = dst[:len(dst)+n]
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}

// Iterate decompresses into pooled buffers. Buffers above maxPooledBuffer
// are left to the garbage collector so that one huge batch does not pin
// its memory for the life of the process.
const maxPooledBuffer = 4 << 20

var buffers = sync.Pool{New: func() any { return new([]byte) }}

func getBuffer() *[]byte { return buffers.Get().(*[]byte) }

func putBuffer(b *[]byte) {
	if cap(*b) <= maxPooledBuffer {
		*b = (*b)[:0]
		buffers.Put(b)
	}
}

// --- gzip ---

type gzipDecoder struct {
	src bytes.Reader
	r   gzip.Reader
}

var gzipDecoders = sync.Pool{New: func() any { return new(gzipDecoder) }}

func gunzip(dst, src []byte, limit int) ([]byte, error) {
	d := gzipDecoders.Get().(*gzipDecoder)
	defer func() {
		d.src.Reset(nil)
		gzipDecoders.Put(d)
	}()
	d.src.Reset(src)
	if err := d.r.Reset(&d.src); err != nil {
		return dst, err
	}
	// Kafka's Java client reads with GZIPInputStream, which accepts
	// concatenated members; so do we (the klauspost default).
	d.r.Multistream(true)
	return readLimited(dst, &d.r, limit)
}

var gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}

func gzipCompress(dst, src []byte) ([]byte, error) {
	return compressPooled[*gzip.Writer](&gzipWriters, dst, src)
}

// resettableWriter is a pooled stream compressor (gzip, lz4).
type resettableWriter interface {
	io.WriteCloser
	Reset(io.Writer)
}

// compressPooled appends src compressed by a writer from pool to dst.
func compressPooled[W resettableWriter](pool *sync.Pool, dst, src []byte) ([]byte, error) {
	buf := bytes.NewBuffer(dst)
	w := pool.Get().(W)
	defer pool.Put(w)
	w.Reset(buf)
	if _, err := w.Write(src); err != nil {
		return dst, err
	}
	if err := w.Close(); err != nil {
		return dst, err
	}
	w.Reset(nil)
	return buf.Bytes(), nil
}

// --- snappy ---

// xerialMagic starts the framing that snappy-java's SnappyOutputStream
// (and so Kafka's Java producer) writes: the magic, a version and a
// compatible-version int32, then [int32 length][raw snappy block] chunks.
// Other clients (librdkafka, franz-go, sarama) write one raw snappy block.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const xerialHeaderSize = 16

func unsnappy(dst, src []byte, limit int) ([]byte, error) {
	if len(src) < xerialHeaderSize || !bytes.Equal(src[:len(xerialMagic)], xerialMagic) {
		return snappyBlock(dst, src, limit)
	}
	start := len(dst)
	rest := src[xerialHeaderSize:]
	for len(rest) > 0 {
		if len(rest) < 4 {
			return dst, fmt.Errorf("%w: snappy: truncated xerial chunk length", ErrCorrupt)
		}
		n := int64(int32(binary.BigEndian.Uint32(rest)))
		rest = rest[4:]
		if n < 0 || n > int64(len(rest)) {
			return dst, fmt.Errorf("%w: snappy: xerial chunk of %d bytes with %d left", ErrCorrupt, n, len(rest))
		}
		var err error
		if dst, err = snappyBlock(dst, rest[:n], limit-(len(dst)-start)); err != nil {
			return dst, err
		}
		rest = rest[n:]
	}
	return dst, nil
}

// snappyBlock appends one raw snappy block, checking its declared size
// against limit before allocating.
func snappyBlock(dst, block []byte, limit int) ([]byte, error) {
	n, err := snappy.DecodedLen(block)
	if err != nil {
		return dst, err
	}
	if n > limit {
		return dst, fmt.Errorf("%w: snappy block of %d bytes, limit %d", ErrTooLarge, n, limit)
	}
	dst = slices.Grow(dst, n)
	// DecodeStrict (not the more lenient s2 decoder) so that we accept
	// exactly what the reference snappy, and so consumers, accept.
	out, err := snappy.DecodeStrict(dst[len(dst):len(dst)+n], block)
	if err != nil {
		return dst, err
	}
	return dst[:len(dst)+len(out)], nil
}

// --- lz4 ---

// lz4Decoder reads the LZ4 frame format, which is what v2 batches use
// (the broken KafkaLZ4 header checksum only affected magic 0).
type lz4Decoder struct {
	src bytes.Reader
	r   *lz4.Reader
}

var lz4Decoders = sync.Pool{New: func() any {
	d := new(lz4Decoder)
	d.r = lz4.NewReader(nil)
	return d
}}

func unlz4(dst, src []byte, limit int) ([]byte, error) {
	d := lz4Decoders.Get().(*lz4Decoder)
	defer func() {
		d.r.Reset(nil)
		d.src.Reset(nil)
		lz4Decoders.Put(d)
	}()
	d.src.Reset(src)
	d.r.Reset(&d.src)
	return readLimited(dst, d.r, limit)
}

var lz4Writers = sync.Pool{New: func() any {
	w := lz4.NewWriter(nil)
	// 64 KiB blocks, as Kafka's Java producer writes, keep the memory a
	// consumer needs per block small; one goroutine per writer.
	_ = w.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ConcurrencyOption(1))
	return w
}}

func lz4Compress(dst, src []byte) ([]byte, error) {
	return compressPooled[*lz4.Writer](&lz4Writers, dst, src)
}

// --- zstd ---

// zstdMaxWindow is the largest window zstd's own levels use (level 22,
// windowLog 27); frames declaring more are refused.
const zstdMaxWindow = 1 << 27

// zstdDecoder decodes with DecodeAll, which is safe for concurrent use and,
// with WithDecodeAllCapLimit, decodes straight into dst and stops at its
// capacity. The stream decoder is not used because it allocates a ring
// of the frame's declared window up front: a 20-byte frame declaring a
// 128 MiB window would cost 128 MiB.
var zstdDecoder = sync.OnceValue(func() *zstd.Decoder {
	d, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(0),
		zstd.WithDecodeAllCapLimit(true),
		zstd.WithDecoderMaxWindow(zstdMaxWindow))
	if err != nil {
		panic(err) // only for invalid options
	}
	return d
})

// zstdInitialRoom is the output room tried first when the frame does not
// declare its content size.
const zstdInitialRoom = 64 << 10

// zstdSlack is the room given past the limit on the last attempt: the
// decoder checks the capacity only between blocks (up to 128 KiB each),
// and reports running out of room mid-block as a generic error, so only
// with a block of slack does a failure mean "corrupt" rather than
// "too small a buffer".
const zstdSlack = 128<<10 + 64

func unzstd(dst, src []byte, limit int) ([]byte, error) {
	start := len(dst)
	// Frames usually declare their content size: then one pass into an
	// exact buffer. Otherwise (Java's streaming encoder on large batches)
	// start small and grow fourfold, decoding again; the repeated work
	// sums to less than 4/3 of the final pass.
	room := max(zstdInitialRoom, 4*len(src))
	var h zstd.Header
	if err := h.Decode(src); err == nil && h.HasFCS {
		if h.FrameContentSize > uint64(limit) {
			return dst, fmt.Errorf("%w: zstd frame of %d bytes, limit %d", ErrTooLarge, h.FrameContentSize, limit)
		}
		room = int(h.FrameContentSize)
	}
	for {
		final := room >= limit
		if final {
			room = limit + zstdSlack
		}
		dst = slices.Grow(dst[:start], room)
		out, err := zstdDecoder().DecodeAll(src, dst[:start:start+room])
		n := len(out) - start
		switch {
		case err == nil && n <= limit:
			// out normally lives in dst's array; keep dst's capacity
			// for reuse by the buffer pool.
			if len(out) <= cap(dst) && (n == 0 || &dst[:len(out)][start] == &out[start]) {
				return dst[:len(out)], nil
			}
			return append(dst[:start], out[start:]...), nil
		case err == nil || errors.Is(err, zstd.ErrDecoderSizeExceeded) || n > limit:
			if final {
				return dst[:start], fmt.Errorf("%w: zstd output past %d bytes", ErrTooLarge, limit)
			}
		case final:
			return dst[:start], err
		}
		room = min(limit, max(4*room, zstdInitialRoom))
	}
}

// zstdEncoder's EncodeAll is safe for concurrent use.
var zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
	w, err := zstd.NewWriter(nil, zstd.WithZeroFrames(true))
	if err != nil {
		panic(err) // only for invalid options
	}
	return w
})

// Compress appends the compressed form of src to dst. Snappy is written as
// one raw block, as librdkafka, franz-go and sarama write it; every Kafka
// client reads both that and the xerial framing.
func Compress(codec Codec, dst, src []byte) ([]byte, error) {
	switch codec {
	case CodecNone:
		return append(dst, src...), nil
	case CodecGzip:
		return gzipCompress(dst, src)
	case CodecSnappy:
		n := snappy.MaxEncodedLen(len(src))
		if n < 0 {
			return dst, fmt.Errorf("%w: %d bytes is too large for snappy", ErrTooLarge, len(src))
		}
		dst = slices.Grow(dst, n)
		out := snappy.Encode(dst[len(dst):len(dst)+n], src)
		return dst[:len(dst)+len(out)], nil
	case CodecLZ4:
		return lz4Compress(dst, src)
	case CodecZstd:
		return zstdEncoder().EncodeAll(src, dst), nil
	}
	return dst, fmt.Errorf("record: unknown compression codec %d", codec)
}
