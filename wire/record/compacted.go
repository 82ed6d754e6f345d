package record

import "fmt"

// IterateCompacted is Iterate for batches that a log cleaner may have
// rewritten: the records' offset deltas must increase strictly (and be
// >= 0) but need not be contiguous, and lastOffsetDelta must equal the last
// record's offset delta. Everything else is checked as Iterate checks it:
// recordCount > 0 and exactly that many records, well-formed varints,
// lengths and codec, no bytes after the last record, the maxUncompressed
// limit for compressed batches. A batch Iterate accepts is accepted too.
//
// Build makes such batches: it takes the records' OffsetDelta as given and
// sets lastOffsetDelta from the last one.
//
// r and everything it points to are reused or released when fn returns;
// fn must copy what it keeps.
func IterateCompacted(b Batch, maxUncompressed int, fn func(r *Record) error) error {
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
	if lod < count-1 {
		return fmt.Errorf("%w: lastOffsetDelta %d with %d records", ErrInvalid, lod, count)
	}

	data := b.Records()
	if codec := b.Codec(); codec != CodecNone {
		buf := getBuffer()
		defer putBuffer(buf)
		var err error
		*buf, err = decompressAppend((*buf)[:0], codec, data, maxUncompressed)
		if err != nil {
			return err
		}
		data = *buf
	}
	if int64(count) > int64(len(data)/minRecordSize) {
		return fmt.Errorf("%w: %d records cannot fit in %d bytes", ErrInvalid, count, len(data))
	}

	var r Record
	var scratch []Header
	prev := int32(-1)
	for i := int32(0); i < count; i++ {
		if len(data) == 0 {
			return fmt.Errorf("%w: batch declares %d records but holds %d", ErrInvalid, count, i)
		}
		length, n := readVarint(data)
		if n <= 0 {
			return fmt.Errorf("%w: record %d: bad length varint", ErrCorrupt, i)
		}
		data = data[n:]
		if length < 0 || int(length) > len(data) {
			return fmt.Errorf("%w: record %d: length %d with %d bytes left", ErrCorrupt, i, length, len(data))
		}
		r.Headers = scratch[:0]
		err := decodeRecord(&r, data[:length:length])
		if cap(r.Headers) > cap(scratch) {
			scratch = r.Headers[:0]
		}
		if len(r.Headers) == 0 {
			r.Headers = nil
		}
		if err != nil {
			return fmt.Errorf("record %d: %w", i, err)
		}
		data = data[length:]
		// Deltas left of the remaining records must still fit below
		// lastOffsetDelta: each later record needs a larger delta.
		if r.OffsetDelta <= prev || r.OffsetDelta > lod-(count-1-i) {
			return fmt.Errorf("%w: record %d has offset delta %d after %d (lastOffsetDelta %d)",
				ErrInvalid, i, r.OffsetDelta, prev, lod)
		}
		if i == count-1 && r.OffsetDelta != lod {
			return fmt.Errorf("%w: last record has offset delta %d, lastOffsetDelta %d", ErrInvalid, r.OffsetDelta, lod)
		}
		prev = r.OffsetDelta
		if err := fn(&r); err != nil {
			return err
		}
	}
	if len(data) != 0 {
		return fmt.Errorf("%w: %d bytes after the last of %d records", ErrCorrupt, len(data), count)
	}
	return nil
}

// ValidateCompacted is IterateCompacted with a no-op callback.
func ValidateCompacted(b Batch, maxUncompressed int) error {
	return IterateCompacted(b, maxUncompressed, func(*Record) error { return nil })
}
