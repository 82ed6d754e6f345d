package record

import (
	"fmt"
)

// Scan is Iterate for a leader's validation: it checks exactly what
// Iterate checks, and calls fn with each record's attributes, timestamp
// delta and offset delta, but reads keys, values and headers past without
// keeping them (r.Key, r.Value and r.Headers are nil). A compressed batch
// is decompressed as a stream through a fixed scanBuffer window, so a
// scan holds the decoder and that window however large the batch or its
// records are. The maxUncompressed limit and DecompressionBudget apply as
// for Iterate.
func Scan(b Batch, maxUncompressed int, fn func(r *Record) error) error {
	var r Record
	return walk(b, maxUncompressed, true, walkScan, 0, func(src *recordSource, i int32, length int) (*Record, error) {
		if err := scanRecord(src, &r, length); err != nil {
			return nil, fmt.Errorf("record %d: %w", i, err)
		}
		return &r, nil
	}, fn)
}

// scanRecord is decodeRecord over a stream: it consumes exactly length
// bytes, which the fields must use up, and fails as decodeRecord would.
func scanRecord(src *recordSource, r *Record, length int) error {
	left := length
	if left < 1 || !src.fill(1) {
		return src.short(fmt.Errorf("%w: empty record", ErrCorrupt))
	}
	r.Attributes = int8(src.window()[0])
	src.advance(1)
	left--

	var err error
	var v int64
	if v, err = scanVarint(src, &left, false); err != nil {
		return fmt.Errorf("timestamp delta: %w", err)
	}
	r.TimestampDelta = v
	if v, err = scanVarint(src, &left, true); err != nil {
		return fmt.Errorf("offset delta: %w", err)
	}
	r.OffsetDelta = int32(v)
	if err := scanBytes(src, &left, true); err != nil {
		return fmt.Errorf("key: %w", err)
	}
	if err := scanBytes(src, &left, true); err != nil {
		return fmt.Errorf("value: %w", err)
	}
	nh, err := scanVarint(src, &left, true)
	if err != nil {
		return fmt.Errorf("header count: %w", err)
	}
	if nh < 0 || int(nh) > left/2 {
		return fmt.Errorf("%w: header count %d with %d bytes left", ErrCorrupt, nh, left)
	}
	for j := 0; j < int(nh); j++ {
		if err := scanBytes(src, &left, false); err != nil {
			return fmt.Errorf("header %d key: %w", j, err)
		}
		if err := scanBytes(src, &left, true); err != nil {
			return fmt.Errorf("header %d value: %w", j, err)
		}
	}
	if left != 0 {
		return fmt.Errorf("%w: %d bytes left inside the record", ErrCorrupt, left)
	}
	r.Key, r.Value, r.Headers = nil, nil, nil
	return nil
}

// scanVarint reads a varint (an int32 one when short) from the at most
// *left bytes left of the record.
func scanVarint(src *recordSource, left *int, short bool) (int64, error) {
	src.fill(min(*left, 10)) // a short read is judged by the decoder
	w := src.window()
	w = w[:min(len(w), *left)]
	var v int64
	var n int
	if short {
		var v32 int32
		v32, n = readVarint(w)
		v = int64(v32)
	} else {
		v, n = readVarlong(w)
	}
	if n <= 0 {
		return 0, src.short(fmt.Errorf("%w: bad varint", ErrCorrupt))
	}
	src.advance(n)
	*left -= n
	return v, nil
}

// scanBytes reads past a varint-length-prefixed field (-1 = null when
// nullable) that must fit in the record.
func scanBytes(src *recordSource, left *int, nullable bool) error {
	l, err := scanVarint(src, left, true)
	if err != nil {
		return fmt.Errorf("length: %w", err)
	}
	if l == -1 && nullable {
		return nil
	}
	if l < 0 || int(l) > *left {
		return fmt.Errorf("%w: length %d with %d bytes left", ErrCorrupt, l, *left)
	}
	if !src.skip(int(l)) {
		return src.short(fmt.Errorf("%w: length %d past the end of the data", ErrCorrupt, l))
	}
	*left -= int(l)
	return nil
}
