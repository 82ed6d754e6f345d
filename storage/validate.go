package storage

import (
	"bytes"
	"fmt"
	"time"

	"github.com/kbroker/kbroker/wire/record"
)

// decompressionFactor bounds how far a batch may expand when the leader
// decompresses it to validate: 64 × max.message.bytes, which no sane
// producer batch reaches and which keeps a decompression bomb from
// exhausting memory.
const decompressionFactor = 64

// targetCodec resolves the topic's compression.type against the batch's
// own codec ("producer" keeps whatever the producer chose).
func targetCodec(compressionType string, batch record.Codec) record.Codec {
	switch compressionType {
	case "uncompressed":
		return record.CodecNone
	case "gzip":
		return record.CodecGzip
	case "snappy":
		return record.CodecSnappy
	case "lz4":
		return record.CodecLZ4
	case "zstd":
		return record.CodecZstd
	}
	return batch
}

// validateForAppend is the leader's record-level validation (Kafka's
// LogValidator), after the header checks of validateClientBatch: every record is decoded and checked, CreateTime
// timestamps must lie within message.timestamp.{before,after}.max.ms of
// now, and the batch is rebuilt only when the topic's compression.type
// asks for a different codec. It returns the batch to append (b itself,
// untouched, in the common case) and the LogAppendTime to stamp, or -1.
func validateForAppend(b record.Batch, cfg *LogConfig, now time.Time) (record.Batch, int64, error) {
	nowMs := now.UnixMilli()
	logAppendTime := int64(-1)
	if cfg.MessageTimestampType == TimestampLogAppendTime {
		logAppendTime = nowMs
	}
	target := targetCodec(cfg.CompressionType, b.Codec())
	rebuild := target != b.Codec()

	var records []record.Record
	limit := decompressionFactor * int(cfg.MaxMessageBytes)
	base := b.BaseTimestamp()
	err := record.Iterate(b, limit, func(r *record.Record) error {
		if logAppendTime < 0 {
			ts := base + r.TimestampDelta
			if timestampOutOfRange(ts, nowMs, cfg.MessageTimestampBeforeMaxMs, cfg.MessageTimestampAfterMaxMs) {
				return fmt.Errorf("%w: timestamp %d, now %d", ErrInvalidTimestamp, ts, nowMs)
			}
		}
		if rebuild {
			records = append(records, cloneRecord(r))
		}
		return nil
	})
	if err != nil {
		return nil, -1, err
	}
	if !rebuild {
		return b, logAppendTime, nil
	}
	attrs := b.Attributes()&^record.CompressionMask | int16(target)
	nb, err := record.Build(record.BatchSpec{
		BaseOffset:           0,
		PartitionLeaderEpoch: b.PartitionLeaderEpoch(),
		Attributes:           attrs,
		BaseTimestamp:        base,
		MaxTimestamp:         b.MaxTimestamp(),
		ProducerID:           b.ProducerID(),
		ProducerEpoch:        b.ProducerEpoch(),
		BaseSequence:         b.BaseSequence(),
		Level:                cfg.compressionLevel(target),
	}, records)
	if err != nil {
		return nil, -1, fmt.Errorf("recompressing to %s: %w", target, err)
	}
	return nb, logAppendTime, nil
}

// timestampOutOfRange reports whether ts is more than before ms older or
// after ms newer than now. The differences are taken unsigned so extreme
// timestamps cannot overflow into range.
func timestampOutOfRange(ts, now, before, after int64) bool {
	if ts < now {
		return uint64(now)-uint64(ts) > uint64(before)
	}
	return uint64(ts)-uint64(now) > uint64(after)
}

// cloneRecord deep-copies a record: Iterate reuses what it hands out.
func cloneRecord(r *record.Record) record.Record {
	c := *r
	c.Key = bytes.Clone(r.Key)
	c.Value = bytes.Clone(r.Value)
	c.Headers = make([]record.Header, len(r.Headers))
	for i, h := range r.Headers {
		c.Headers[i] = record.Header{Key: h.Key, Value: bytes.Clone(h.Value)}
	}
	return c
}
