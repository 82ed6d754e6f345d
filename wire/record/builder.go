package record

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Builder builds a v2 batch one record at a time, compressing as records
// arrive (gzip, lz4 and zstd are stream compressors), so that rebuilding
// a batch holds the batch being built and one record, not a copy of every
// record. Snappy is the exception: it is written as one raw block (see
// Compress), so its records are gathered first.
type Builder struct {
	spec    BatchSpec
	codec   Codec
	out     bytes.Buffer   // header placeholder, then the records section
	w       io.WriteCloser // compressor into out; nil for none and snappy
	release func()         // returns w to its pool
	raw     []byte         // snappy: the uncompressed records section
	scratch []byte         // one encoded record
	count   int64
	last    int32 // last record's OffsetDelta
	maxTS   int64 // largest TimestampDelta
	err     error
}

// NewBuilder starts a batch with spec's header; the codec bits of
// spec.Attributes decide the compression.
func NewBuilder(spec BatchSpec) *Builder {
	b := &Builder{spec: spec, codec: Codec(spec.Attributes & CompressionMask)}
	b.out.Write(make([]byte, HeaderSize))
	switch b.codec {
	case CodecNone, CodecSnappy:
	case CodecGzip:
		pool := gzipPool(spec.Level)
		w := pool.Get().(*gzip.Writer)
		w.Reset(&b.out)
		b.w, b.release = w, func() { w.Reset(nil); pool.Put(w) }
	case CodecLZ4:
		pool := lz4Pool(spec.Level)
		w := pool.Get().(*lz4.Writer)
		w.Reset(&b.out)
		b.w, b.release = w, func() { w.Reset(nil); pool.Put(w) }
	case CodecZstd:
		pool := zstdPool(spec.Level)
		w := pool.Get().(*zstd.Encoder)
		w.Reset(&b.out)
		b.w, b.release = w, func() { w.Reset(nil); pool.Put(w) }
	default:
		b.err = fmt.Errorf("%w: unknown compression codec %d", ErrInvalid, b.codec)
	}
	return b
}

// zstdStreamEncoders compress rebuilt batches as they are built: one
// goroutine each and a 1 MiB window, which every zstd decoder supports.
var zstdStreamEncoders = sync.Pool{New: func() any {
	w, err := zstd.NewWriter(nil,
		zstd.WithEncoderConcurrency(1),
		zstd.WithWindowSize(1<<20),
		zstd.WithLowerEncoderMem(true),
		zstd.WithZeroFrames(true))
	if err != nil {
		panic(err) // only for invalid options
	}
	return w
}}

// Add appends r, taken as given (callers number OffsetDelta 0, 1, 2, ...).
// r is not retained.
func (b *Builder) Add(r *Record) error {
	if b.err != nil {
		return b.err
	}
	if b.count == 0 || r.TimestampDelta > b.maxTS {
		b.maxTS = r.TimestampDelta
	}
	b.count++
	b.last = r.OffsetDelta
	switch b.codec {
	case CodecNone:
		// A bytes.Buffer write cannot fail today (it panics when it
		// cannot grow); checking keeps Add right if the buffer changes.
		if err := b.writeRecord(&b.out, r); err != nil {
			b.fail(fmt.Errorf("encoding record: %w", err))
		}
	case CodecSnappy:
		b.raw = AppendRecord(b.raw, r)
	default:
		if err := b.writeRecord(b.w, r); err != nil {
			b.fail(fmt.Errorf("compressing to %s: %w", b.codec, err))
		}
	}
	return b.err
}

// writeRecord writes r as AppendRecord encodes it, passing the value
// straight to w rather than copying it into scratch first.
func (b *Builder) writeRecord(w io.Writer, r *Record) error {
	b.scratch = appendRecordHead(b.scratch[:0], r)
	if len(r.Value) <= 4<<10 { // small: one write
		b.scratch = append(b.scratch, r.Value...)
		b.scratch = appendRecordTail(b.scratch, r)
		_, err := w.Write(b.scratch)
		return err
	}
	if _, err := w.Write(b.scratch); err != nil {
		return err
	}
	if _, err := w.Write(r.Value); err != nil {
		return err
	}
	b.scratch = appendRecordTail(b.scratch[:0], r)
	_, err := w.Write(b.scratch)
	return err
}

func (b *Builder) fail(err error) {
	if b.err == nil {
		b.err = err
	}
	if b.release != nil {
		b.release()
		b.release = nil
	}
}

// Finish completes the batch: recordCount, lastOffsetDelta (the last
// record's OffsetDelta), maxTimestamp (when spec leaves it 0),
// batchLength and the CRC. A batch needs at least one record.
func (b *Builder) Finish() (Batch, error) {
	if b.err != nil {
		return nil, b.err
	}
	defer b.fail(errFinished)
	if b.count == 0 {
		return nil, fmt.Errorf("%w: no records", ErrInvalid)
	}
	if b.count > 1<<31-1 {
		return nil, fmt.Errorf("%w: %d records", ErrTooLarge, b.count)
	}
	switch b.codec {
	case CodecSnappy:
		out, err := Compress(CodecSnappy, b.out.Bytes(), b.raw)
		if err != nil {
			return nil, err
		}
		b.out = *bytes.NewBuffer(out)
		b.raw = nil
	case CodecGzip, CodecLZ4, CodecZstd:
		if err := b.w.Close(); err != nil {
			return nil, fmt.Errorf("compressing to %s: %w", b.codec, err)
		}
	}
	out := b.out.Bytes()
	if len(out)-LogOverhead > 1<<31-1 {
		return nil, fmt.Errorf("%w: batch of %d bytes", ErrTooLarge, len(out))
	}
	spec := b.spec
	maxTS := spec.MaxTimestamp
	if maxTS == 0 {
		maxTS = spec.BaseTimestamp + b.maxTS
	}
	be := binary.BigEndian
	be.PutUint64(out[baseOffsetOffset:], uint64(spec.BaseOffset))
	be.PutUint32(out[batchLengthOffset:], uint32(len(out)-LogOverhead))
	be.PutUint32(out[partitionLeaderEpochOffset:], uint32(spec.PartitionLeaderEpoch))
	out[magicOffset] = MagicV2
	be.PutUint16(out[attributesOffset:], uint16(spec.Attributes))
	be.PutUint32(out[lastOffsetDeltaOffset:], uint32(b.last))
	be.PutUint64(out[baseTimestampOffset:], uint64(spec.BaseTimestamp))
	be.PutUint64(out[maxTimestampOffset:], uint64(maxTS))
	be.PutUint64(out[producerIDOffset:], uint64(spec.ProducerID))
	be.PutUint16(out[producerEpochOffset:], uint16(spec.ProducerEpoch))
	be.PutUint32(out[baseSequenceOffset:], uint32(spec.BaseSequence))
	be.PutUint32(out[recordCountOffset:], uint32(b.count))
	batch := Batch(out)
	batch.SetCRC()
	return batch, nil
}

var errFinished = fmt.Errorf("%w: builder already finished", ErrInvalid)

// Rebuild recompresses b's records into a batch of codec with b's header
// fields, calling fn for each record first (as Iterate does; an error
// from fn stops it). Records stream from the decompressor into the new
// compressor; the decompression's share of DecompressionBudget also
// covers the batch being built, which is at most about maxUncompressed
// bytes.
func Rebuild(b Batch, codec Codec, maxUncompressed int, fn func(r *Record) error) (Batch, error) {
	return RebuildLevel(b, codec, 0, maxUncompressed, fn)
}

// RebuildLevel is Rebuild compressing at a Kafka compression level of
// codec (BatchSpec.Level; 0 is the codec's default).
func RebuildLevel(b Batch, codec Codec, level, maxUncompressed int, fn func(r *Record) error) (Batch, error) {
	if len(b) < HeaderSize {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, ErrTruncated)
	}
	nb := NewBuilder(BatchSpec{
		BaseOffset:           b.BaseOffset(),
		PartitionLeaderEpoch: b.PartitionLeaderEpoch(),
		Attributes:           b.Attributes()&^CompressionMask | int16(codec&CompressionMask),
		BaseTimestamp:        b.BaseTimestamp(),
		MaxTimestamp:         b.MaxTimestamp(),
		ProducerID:           b.ProducerID(),
		ProducerEpoch:        b.ProducerEpoch(),
		BaseSequence:         b.BaseSequence(),
		Level:                level,
	})
	defer nb.fail(errFinished)
	var r Record
	var scratch []Header
	limit := min(max(maxUncompressed, 0), MaxDecompressedBatchBytes)
	err := walk(b, maxUncompressed, true, walkRebuild, int64(limit), func(src *recordSource, i int32, length int) (*Record, error) {
		return decodeFromSource(src, &r, &scratch, i, length)
	}, func(r *Record) error {
		if err := fn(r); err != nil {
			return err
		}
		return nb.Add(r)
	})
	if err != nil {
		return nil, err
	}
	return nb.Finish()
}
