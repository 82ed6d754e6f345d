package storage

import (
	"errors"

	"github.com/kbroker/kbroker/wire/record"
)

// maxUncompressedForTimestamp bounds decompression when looking for a
// record by timestamp.
const maxUncompressedForTimestamp = 64 << 20

var errStopIterate = errors.New("stop")

// firstRecordAtOrAfter returns the offset and timestamp of the first
// record of b at or above minOffset whose timestamp is >= ts. The caller has checked that b's
// maxTimestamp is >= ts. With LogAppendTime every record carries the
// batch's maxTimestamp. A batch whose records cannot be decoded answers at
// batch level (its base offset and maxTimestamp).
func firstRecordAtOrAfter(b record.Batch, ts, minOffset int64) (int64, int64, bool, error) {
	if b.LogAppendTime() {
		return max(b.BaseOffset(), minOffset), b.MaxTimestamp(), true, nil
	}
	var off, t int64
	found := false
	err := record.IterateCompacted(b, maxUncompressedForTimestamp, func(r *record.Record) error {
		if rt := b.BaseTimestamp() + r.TimestampDelta; rt >= ts && b.BaseOffset()+int64(r.OffsetDelta) >= minOffset {
			off, t, found = b.BaseOffset()+int64(r.OffsetDelta), rt, true
			return errStopIterate
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStopIterate) {
		return max(b.BaseOffset(), minOffset), b.MaxTimestamp(), true, nil
	}
	return off, t, found, nil
}
