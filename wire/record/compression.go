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
// kilobytes of zstd or gzip expand to gigabytes, and formats declare sizes
// (zstd's frame content size and window, snappy's decoded length) that a
// naive decoder allocates up front. So every codec is read as a stream
// (openStream) through a reader that fails with ErrTooLarge one byte past
// the caller's limit, and no buffer is ever sized from a length the data
// declares:
//
//   - gzip and lz4 are streamed; their state is bounded by the formats
//     (a 32 KiB window; lz4 blocks of at most 4 MiB);
//   - zstd is streamed with windows of at most zstdMaxWindow, checked
//     before the decoder allocates its window; a frame declaring a content
//     size above the limit is refused from its header;
//   - snappy has no stream form: each block (the one raw block, or each
//     xerial chunk) is decoded whole, after its declared length is checked
//     against the limit and against what the block's bytes could possibly
//     expand to (snappyMaxExpansion), so a short block cannot make us
//     allocate a long one.
//
// Decoders are pooled: their tables are large, and a leader decompresses
// on every compressed produce.

// Decompress appends the decompressed form of src to a new slice; it fails
// (wrapping ErrTooLarge) as soon as the output would exceed limit bytes,
// and with an error wrapping ErrCorrupt when src is not valid for codec.
// The output grows as data arrives, never from a size src declares.
func Decompress(codec Codec, src []byte, limit int) ([]byte, error) {
	return decompressAppend(nil, codec, src, limit)
}

func decompressAppend(dst []byte, codec Codec, src []byte, limit int) ([]byte, error) {
	limit = min(max(limit, 0), MaxDecompressedBatchBytes)
	if codec == CodecNone {
		if len(src) > limit {
			return dst, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(src), limit)
		}
		return append(dst, src...), nil
	}
	defer acquire(decoderWeight(codec, src, limit) + min(int64(limit), expansionBound(codec, src)))()
	st, err := openStream(codec, src, limit)
	if err != nil {
		return dst, err
	}
	defer st.close()
	dst, err = readLimited(dst, st, limit)
	return dst, decodeError(codec, err)
}

// decodeError classifies a decoder's error: resource limits stay
// ErrTooLarge, everything else is ErrCorrupt.
func decodeError(codec Codec, err error) error {
	switch {
	case err == nil || errors.Is(err, ErrTooLarge) || errors.Is(err, ErrCorrupt):
		return err
	case errors.Is(err, zstd.ErrWindowSizeExceeded) || errors.Is(err, zstd.ErrDecoderSizeExceeded):
		return fmt.Errorf("%w: %s: %w", ErrTooLarge, codec, err)
	}
	return fmt.Errorf("%w: %s: %w", ErrCorrupt, codec, err)
}

// stream is one open decompression: a reader of the decompressed bytes
// that fails with ErrTooLarge past its limit, and what it holds.
type stream struct {
	r       io.Reader
	left    int    // bytes the limit still allows
	limit   int    // for the error message
	release func() // returns the decoder to its pool
}

func (s *stream) Read(p []byte) (int, error) {
	if s.left < 0 {
		return 0, fmt.Errorf("%w: limit %d", ErrTooLarge, s.limit)
	}
	// Ask for one byte more than allowed, to tell "exactly at the
	// limit" from "past it".
	if len(p) > s.left+1 {
		p = p[:s.left+1]
	}
	n, err := s.r.Read(p)
	s.left -= n
	if s.left < 0 {
		return n + s.left, fmt.Errorf("%w: limit %d", ErrTooLarge, s.limit)
	}
	return n, err
}

func (s *stream) close() {
	if s.release != nil {
		s.release()
		s.release = nil
	}
}

// openStream starts decompressing src. The caller must close the stream.
func openStream(codec Codec, src []byte, limit int) (*stream, error) {
	var (
		r       io.Reader
		release func()
		err     error
	)
	switch codec {
	case CodecGzip:
		r, release, err = openGzip(src)
	case CodecSnappy:
		r, release, err = openSnappy(src, limit)
	case CodecLZ4:
		r, release = openLZ4(src)
	case CodecZstd:
		r, release, err = openZstd(src, limit)
	default:
		return nil, fmt.Errorf("%w: unknown compression codec %d", ErrCorrupt, codec)
	}
	if err != nil {
		return nil, decodeError(codec, err)
	}
	return &stream{r: r, left: limit, limit: limit, release: release}, nil
}

// readLimited appends everything r yields to dst, failing with ErrTooLarge
// when it yields more than limit bytes. dst grows geometrically as data
// arrives, never beyond limit bytes past its starting length.
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

func openGzip(src []byte) (io.Reader, func(), error) {
	d := gzipDecoders.Get().(*gzipDecoder)
	release := func() {
		d.src.Reset(nil)
		gzipDecoders.Put(d)
	}
	d.src.Reset(src)
	if err := d.r.Reset(&d.src); err != nil {
		release()
		return nil, nil, err
	}
	// Kafka's Java client reads with GZIPInputStream, which accepts
	// concatenated members; so do we (the klauspost default).
	d.r.Multistream(true)
	return &d.r, release, nil
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

// snappyMaxExpansion bounds what one byte of a snappy block can decode
// to: the densest element is a 3-byte copy of 64 bytes. A block declaring
// more than this many times its own size cannot be valid, so its declared
// length is refused before anything is allocated for it.
const snappyMaxExpansion = 22

// snappyReader decodes a raw snappy block, or xerial chunks one at a time,
// into a buffer the size of the largest block.
type snappyReader struct {
	rest   []byte // undecoded input
	xerial bool
	left   int    // output bytes the limit still allows
	buf    []byte // decoded block
	pos    int    // read position in buf
}

// snappyReaders keep their block buffers between batches, up to
// maxPooledBuffer.
var snappyReaders = sync.Pool{New: func() any { return new(snappyReader) }}

func openSnappy(src []byte, limit int) (io.Reader, func(), error) {
	r := snappyReaders.Get().(*snappyReader)
	*r = snappyReader{rest: src, left: limit, buf: r.buf[:0]}
	if len(src) >= xerialHeaderSize && bytes.Equal(src[:len(xerialMagic)], xerialMagic) {
		r.rest, r.xerial = src[xerialHeaderSize:], true
	}
	return r, func() {
		if cap(r.buf) <= maxPooledBuffer {
			*r = snappyReader{buf: r.buf[:0]}
			snappyReaders.Put(r)
		}
	}, nil
}

func (r *snappyReader) Read(p []byte) (int, error) {
	for r.pos == len(r.buf) {
		if len(r.rest) == 0 {
			return 0, io.EOF
		}
		if err := r.next(); err != nil {
			return 0, err
		}
	}
	n := copy(p, r.buf[r.pos:])
	r.pos += n
	return n, nil
}

// next decodes the next block into buf.
func (r *snappyReader) next() error {
	block := r.rest
	if r.xerial {
		if len(r.rest) < 4 {
			return fmt.Errorf("%w: snappy: truncated xerial chunk length", ErrCorrupt)
		}
		n := int64(int32(binary.BigEndian.Uint32(r.rest)))
		r.rest = r.rest[4:]
		if n < 0 || n > int64(len(r.rest)) {
			return fmt.Errorf("%w: snappy: xerial chunk of %d bytes with %d left", ErrCorrupt, n, len(r.rest))
		}
		block = r.rest[:n]
	}
	r.rest = r.rest[len(block):]
	n, err := snappy.DecodedLen(block)
	switch {
	case err != nil:
		return fmt.Errorf("%w: snappy: %w", ErrCorrupt, err)
	case n > r.left:
		return fmt.Errorf("%w: snappy block of %d bytes, limit %d", ErrTooLarge, n, r.left)
	case int64(n) > snappyMaxExpansion*int64(len(block)):
		return fmt.Errorf("%w: snappy block of %d bytes declares %d", ErrCorrupt, len(block), n)
	}
	if cap(r.buf) < n {
		r.buf = make([]byte, n)
	}
	// DecodeStrict (not the more lenient s2 decoder) so that we accept
	// exactly what the reference snappy, and so consumers, accept.
	out, err := snappy.DecodeStrict(r.buf[:n:cap(r.buf)], block)
	if err != nil {
		return fmt.Errorf("%w: snappy: %w", ErrCorrupt, err)
	}
	r.buf, r.pos = out, 0
	r.left -= len(out)
	return nil
}

// snappyBudget is the largest block a snappy input decodes at once (the
// one raw block, or the largest xerial chunk), for the decompression
// budget. It trusts no declared length beyond what snappyMaxExpansion
// allows for the block's own size.
func snappyBudget(src []byte) int64 {
	if len(src) < xerialHeaderSize || !bytes.Equal(src[:len(xerialMagic)], xerialMagic) {
		return snappyMaxExpansion * int64(len(src))
	}
	var largest int64
	rest := src[xerialHeaderSize:]
	for len(rest) >= 4 {
		n := int64(int32(binary.BigEndian.Uint32(rest)))
		rest = rest[4:]
		if n < 0 || n > int64(len(rest)) {
			break
		}
		largest = max(largest, snappyMaxExpansion*n)
		rest = rest[n:]
	}
	return largest
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

func openLZ4(src []byte) (io.Reader, func()) {
	d := lz4Decoders.Get().(*lz4Decoder)
	d.src.Reset(src)
	d.r.Reset(&d.src)
	return d.r, func() {
		d.r.Reset(nil)
		d.src.Reset(nil)
		lz4Decoders.Put(d)
	}
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

// zstdMaxWindow is the largest window a zstd frame may use: the stream
// decoder keeps a window-sized history, so this bounds its memory. 8 MiB
// is what the zstd format asks every decoder to support and the largest
// window of zstd's levels 1-19 (and of klauspost's encoder, which franz-go
// uses); only the "ultra" levels 20-22 on batches above 8 MiB go past it,
// and such frames are refused (ErrTooLarge). A single-segment frame's
// window is its content size, so the same bound applies to it.
const zstdMaxWindow = 8 << 20

// zstdDecoders are stream decoders: one goroutine each (concurrency 1
// decodes synchronously, starting none), windows checked against
// zstdMaxWindow before the history is allocated.
var zstdDecoders = sync.Pool{New: func() any {
	d, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxWindow(zstdMaxWindow),
		zstd.WithDecoderMaxMemory(MaxDecompressedBatchBytes))
	if err != nil {
		panic(err) // only for invalid options
	}
	return d
}}

type zstdDecoder struct {
	src bytes.Reader
	d   *zstd.Decoder
}

func openZstd(src []byte, limit int) (io.Reader, func(), error) {
	// A frame that declares more content than the limit is refused from
	// its header, without decoding.
	var h zstd.Header
	if err := h.Decode(src); err == nil && h.HasFCS && h.FrameContentSize > uint64(limit) {
		return nil, nil, fmt.Errorf("%w: zstd frame declares %d bytes, limit %d", ErrTooLarge, h.FrameContentSize, limit)
	}
	z := &zstdDecoder{d: zstdDecoders.Get().(*zstd.Decoder)}
	z.src.Reset(src)
	release := func() {
		_ = z.d.Reset(nil)
		zstdDecoders.Put(z.d)
	}
	if err := z.d.Reset(&z.src); err != nil {
		release()
		return nil, nil, err
	}
	return z.d, release, nil
}

// zstdBudget is the memory a zstd stream decoder may hold: a window
// history of up to zstdMaxWindow (any frame of a multi-frame input may
// use the largest, so that is what is charged), plus two blocks of ring
// slack and the block buffers.
const zstdBudget = zstdMaxWindow + 4*(128<<10)

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
