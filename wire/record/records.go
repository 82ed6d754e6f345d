package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// ErrTooLarge means a batch's records would decompress to more bytes than
// the caller allowed. It is a resource limit, not proof of corruption, so
// it is kept apart from ErrCorrupt.
var ErrTooLarge = errors.New("record: batch expands past the limit")

// Header is one record header. The key is never null on the wire; a nil
// Value is a null value.
type Header struct {
	Key   string
	Value []byte // nil = null
}

// Record is one record of a v2 batch, as encoded (deltas relative to the
// batch header):
//
//	length          varint   bytes after this field
//	attributes      int8     unused, 0
//	timestampDelta  varlong  from the batch's baseTimestamp
//	offsetDelta     varint   from the batch's baseOffset
//	keyLength       varint   -1 = null
//	key             bytes
//	valueLength     varint   -1 = null
//	value           bytes
//	headerCount     varint
//	headers         headerKeyLength varint, headerKey,
//	                headerValueLength varint (-1 = null), headerValue
type Record struct {
	Attributes     int8
	TimestampDelta int64
	OffsetDelta    int32
	Key, Value     []byte // nil means null (-1 length), empty non-nil means empty
	Headers        []Header
}

// minRecordSize is the smallest possible encoded record: a one-byte varint
// for every field, no key, value or headers.
const minRecordSize = 7

// Iterate decodes every record of b and calls fn for each, in order,
// stopping at the first error (fn's error is returned unchanged).
//
// A compressed batch is decompressed as a stream, one record at a time,
// into a buffer reused across records that grows only to the largest
// record: the whole decompressed batch is never held. Its decompressed
// size may not exceed maxUncompressed bytes (capped by
// MaxDecompressedBatchBytes; an error wrapping ErrTooLarge, found before
// allocating past the limit), and the decompression takes its share of
// DecompressionBudget first. The limit does not apply to an uncompressed
// batch, whose records are read in place.
//
// Iterate checks what Kafka's LogValidator checks of a v2 batch before it
// assigns offsets in place: recordCount > 0 and lastOffsetDelta ==
// recordCount-1, exactly recordCount records whose offset deltas are 0, 1,
// 2, ... (ErrInvalid); varints, lengths and the codec are well formed, each
// record's length prefix matches the bytes its fields use, and no bytes
// follow the last record (ErrCorrupt). It does not check the CRC: see
// Batch.ValidCRC.
//
// r and everything it points to are reused or released when fn returns;
// fn must copy what it keeps.
func Iterate(b Batch, maxUncompressed int, fn func(r *Record) error) error {
	return iterate(b, maxUncompressed, true, fn)
}

// iterate is Iterate (contiguous offset deltas 0, 1, 2, ...) and
// IterateCompacted (strictly increasing deltas, gaps allowed) in one.
func iterate(b Batch, maxUncompressed int, contiguous bool, fn func(r *Record) error) error {
	var r Record
	var scratch []Header // header storage reused across records
	return walk(b, maxUncompressed, contiguous, walkIterate, 0, func(src *recordSource, i int32, length int) (*Record, error) {
		return decodeFromSource(src, &r, &scratch, i, length)
	}, fn)
}

// decodeFromSource decodes the length-byte record at the front of src
// into r, keeping *scratch as header storage for the next record.
func decodeFromSource(src *recordSource, r *Record, scratch *[]Header, i int32, length int) (*Record, error) {
	if !src.fill(length) {
		return nil, src.short(fmt.Errorf("%w: record %d: length %d with %d bytes left", ErrCorrupt, i, length, src.buffered()))
	}
	r.Headers = (*scratch)[:0]
	err := decodeRecord(r, src.window()[:length:length])
	if cap(r.Headers) > cap(*scratch) {
		*scratch = r.Headers[:0]
	}
	if len(r.Headers) == 0 {
		r.Headers = nil
	}
	if err != nil {
		return nil, fmt.Errorf("record %d: %w", i, err)
	}
	return r, nil
}

// How walk reads records: whole into a growing window (Iterate,
// Rebuild), or field by field through a fixed one (Scan).
type walkMode int

const (
	walkIterate walkMode = iota
	walkScan
	walkRebuild
)

// walk is the loop Iterate and Scan share: the batch-level checks, the
// stream, each record's length prefix and offset-delta checks, and the
// check that nothing follows the last record. decode reads one record of
// length bytes from src (consuming none of them: walk advances past the
// record afterwards).
//
// The decompression first takes its share of DecompressionBudget: the
// decoder's state and the scan window, plus, unless scanning, the most
// the batch can decompress to (the limit, or less for a batch too small
// to reach it: a record, and so the window, may be that large), plus up
// to as much again as extra for what the caller builds alongside
// (Rebuild's output).
func walk(b Batch, maxUncompressed int, contiguous bool, mode walkMode, extra int64,
	decode func(src *recordSource, i int32, length int) (*Record, error), fn func(r *Record) error) error {
	scan := mode == walkScan
	if len(b) < HeaderSize {
		return fmt.Errorf("%w: %w", ErrCorrupt, ErrTruncated)
	}
	if m := b.Magic(); m != MagicV2 {
		return fmt.Errorf("%w: %d", ErrMagic, m)
	}
	if int64(b.BatchLength())+LogOverhead != int64(len(b)) {
		return fmt.Errorf("%w: batchLength %d but batch is %d bytes", ErrCorrupt, b.BatchLength(), len(b))
	}
	count := b.RecordCount()
	if count <= 0 {
		return fmt.Errorf("%w: record count %d", ErrInvalid, count)
	}
	lod := b.LastOffsetDelta()
	if lod < count-1 || contiguous && lod != count-1 {
		return fmt.Errorf("%w: lastOffsetDelta %d with %d records", ErrInvalid, lod, count)
	}

	data := b.Records()
	src := recordSource{buf: data, end: len(data), err: io.EOF}
	if codec := b.Codec(); codec != CodecNone {
		limit := min(max(maxUncompressed, 0), MaxDecompressedBatchBytes)
		// A scan holds the decoder and a small window; a full
		// iteration may hold a record as large as the limit.
		output := min(int64(limit), expansionBound(codec, data))
		weight := decoderWeight(codec, data, limit) + scanBuffer + min(extra, output)
		if !scan {
			weight += output
		}
		release := acquire(weight)
		defer release()
		st, err := openStream(codec, data, limit)
		if err != nil {
			return err
		}
		defer st.close()
		// The window is pooled: most batches need only a few KiB of it.
		buf := getBuffer()
		defer func() { *buf = src.buf[:0]; putBuffer(buf) }()
		src = recordSource{r: st, codec: codec, buf: (*buf)[:cap(*buf)], max: max(limit+1, scanBuffer)}
		if len(src.buf) < scanBuffer {
			src.buf = make([]byte, scanBuffer)
		}
	} else if int64(count) > int64(len(data)/minRecordSize) {
		// Each record takes at least minRecordSize bytes, so a count
		// the data cannot hold is rejected before decoding anything.
		return fmt.Errorf("%w: %d records cannot fit in %d bytes", ErrInvalid, count, len(data))
	}

	prev := int32(-1)
	for i := int32(0); i < count; i++ {
		if !src.fill(1) {
			return src.short(fmt.Errorf("%w: batch declares %d records but holds %d", ErrInvalid, count, i))
		}
		src.fill(binary.MaxVarintLen32) // a short read is judged by readVarint
		length, n := readVarint(src.window())
		if n <= 0 {
			return src.short(fmt.Errorf("%w: record %d: bad length varint", ErrCorrupt, i))
		}
		src.advance(n)
		if length < 0 {
			return fmt.Errorf("%w: record %d: length %d", ErrCorrupt, i, length)
		}
		r, err := decode(&src, i, int(length))
		if err != nil {
			return err
		}
		switch {
		case contiguous && r.OffsetDelta != i:
			return fmt.Errorf("%w: record %d has offset delta %d", ErrInvalid, i, r.OffsetDelta)
		// Each later record needs a larger delta, all at most
		// lastOffsetDelta, and the last one exactly that.
		case r.OffsetDelta <= prev || r.OffsetDelta > lod-(count-1-i):
			return fmt.Errorf("%w: record %d has offset delta %d after %d (lastOffsetDelta %d)",
				ErrInvalid, i, r.OffsetDelta, prev, lod)
		case i == count-1 && r.OffsetDelta != lod:
			return fmt.Errorf("%w: last record has offset delta %d, lastOffsetDelta %d", ErrInvalid, r.OffsetDelta, lod)
		}
		prev = r.OffsetDelta
		if !scan {
			src.advance(int(length))
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	if src.fill(1) {
		return fmt.Errorf("%w: bytes after the last of %d records", ErrCorrupt, count)
	}
	return src.short(nil)
}

// Validate is Iterate with a no-op callback.
func Validate(b Batch, maxUncompressed int) error {
	return Iterate(b, maxUncompressed, func(*Record) error { return nil })
}

// decodeRecord decodes the fields after the length prefix, which must use
// all of body. Headers are appended to r.Headers[:0].
func decodeRecord(r *Record, body []byte) error {
	if len(body) < 1 {
		return fmt.Errorf("%w: empty record", ErrCorrupt)
	}
	r.Attributes = int8(body[0])
	body = body[1:]

	var n int
	if r.TimestampDelta, n = readVarlong(body); n <= 0 {
		return fmt.Errorf("%w: bad timestamp delta", ErrCorrupt)
	}
	body = body[n:]
	if r.OffsetDelta, n = readVarint(body); n <= 0 {
		return fmt.Errorf("%w: bad offset delta", ErrCorrupt)
	}
	body = body[n:]

	var err error
	if r.Key, body, err = readBytes(body, true); err != nil {
		return fmt.Errorf("key: %w", err)
	}
	if r.Value, body, err = readBytes(body, true); err != nil {
		return fmt.Errorf("value: %w", err)
	}

	nh, n := readVarint(body)
	if n <= 0 {
		return fmt.Errorf("%w: bad header count", ErrCorrupt)
	}
	body = body[n:]
	// A header takes at least two bytes; checking first bounds the
	// allocation by the record's size, not by what the count claims.
	if nh < 0 || int(nh) > len(body)/2 {
		return fmt.Errorf("%w: header count %d with %d bytes left", ErrCorrupt, nh, len(body))
	}
	r.Headers = r.Headers[:0]
	for j := int32(0); j < nh; j++ {
		var k, v []byte
		if k, body, err = readBytes(body, false); err != nil {
			return fmt.Errorf("header %d key: %w", j, err)
		}
		if v, body, err = readBytes(body, true); err != nil {
			return fmt.Errorf("header %d value: %w", j, err)
		}
		r.Headers = append(r.Headers, Header{Key: string(k), Value: v})
	}
	if len(body) != 0 {
		return fmt.Errorf("%w: %d bytes left inside the record", ErrCorrupt, len(body))
	}
	return nil
}

// readBytes reads a varint-length-prefixed field. Length -1 is null (nil)
// when nullable; an empty field is a non-nil empty slice. The result's
// capacity is clipped so an append by the caller cannot overwrite what
// follows.
func readBytes(b []byte, nullable bool) (field, rest []byte, err error) {
	l, n := readVarint(b)
	if n <= 0 {
		return nil, b, fmt.Errorf("%w: bad length varint", ErrCorrupt)
	}
	b = b[n:]
	if l == -1 && nullable {
		return nil, b, nil
	}
	if l < 0 || int(l) > len(b) {
		return nil, b, fmt.Errorf("%w: length %d with %d bytes left", ErrCorrupt, l, len(b))
	}
	return b[:l:l], b[l:], nil
}

// AppendRecord appends the wire form of r, with its length prefix, to dst.
func AppendRecord(dst []byte, r *Record) []byte {
	dst = appendRecordHead(dst, r)
	dst = append(dst, r.Value...)
	return appendRecordTail(dst, r)
}

// appendRecordHead appends r's length prefix and fields up to and
// including the value's length: what precedes the value's bytes.
func appendRecordHead(dst []byte, r *Record) []byte {
	size := 1 + varintSize(r.TimestampDelta) + varintSize(int64(r.OffsetDelta)) +
		bytesSize(r.Key) + bytesSize(r.Value) + varintSize(int64(len(r.Headers)))
	for i := range r.Headers {
		h := &r.Headers[i]
		size += varintSize(int64(len(h.Key))) + len(h.Key) + bytesSize(h.Value)
	}
	dst = binary.AppendVarint(dst, int64(size))
	dst = append(dst, byte(r.Attributes))
	dst = binary.AppendVarint(dst, r.TimestampDelta)
	dst = binary.AppendVarint(dst, int64(r.OffsetDelta))
	dst = appendBytes(dst, r.Key)
	if r.Value == nil {
		return binary.AppendVarint(dst, -1)
	}
	return binary.AppendVarint(dst, int64(len(r.Value)))
}

// appendRecordTail appends r's headers: what follows the value's bytes.
func appendRecordTail(dst []byte, r *Record) []byte {
	dst = binary.AppendVarint(dst, int64(len(r.Headers)))
	for i := range r.Headers {
		h := &r.Headers[i]
		dst = binary.AppendVarint(dst, int64(len(h.Key)))
		dst = append(dst, h.Key...)
		dst = appendBytes(dst, h.Value)
	}
	return dst
}
