package storage

import (
	"errors"
	"fmt"
	"time"

	"github.com/kbroker/kbroker/wire/record"
)

// decompressionFactor bounds how far a batch may expand when the leader
// decompresses it to validate: 64 × max.message.bytes (64 MiB at the
// default), which no sane producer batch reaches, capped by
// record.MaxDecompressedBatchBytes (128 MiB) whatever max.message.bytes
// is. Past the limit the batch is refused with INVALID_RECORD (see
// appendError). Memory is bounded separately: a batch that keeps its
// codec is scanned as a stream through a small window, and every
// decompression takes its share of record.DecompressionBudget.
const decompressionFactor = 64

// decompressionLimit is the most a batch of a topic with this
// max.message.bytes may decompress to.
func decompressionLimit(maxMessageBytes int) int {
	return min(decompressionFactor*max(maxMessageBytes, 0), record.MaxDecompressedBatchBytes)
}

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
// LogValidator), after the header checks of validateClientBatch: every
// record is decoded and checked, CreateTime timestamps must lie within
// message.timestamp.{before,after}.max.ms of now, and the batch is rebuilt
// only when the topic's compression.type asks for a different codec. It
// returns the batch to append (b itself, untouched, in the common case)
// and the LogAppendTime to stamp, or -1.
//
// When the codec is kept (the common case) the records are scanned as
// they stream out of the decompressor, keys and values read past, never
// held; when it changes they stream from the decompressor into the new
// compressor one at a time.
func validateForAppend(b record.Batch, cfg *LogConfig, now time.Time) (record.Batch, int64, error) {
	nowMs := now.UnixMilli()
	logAppendTime := int64(-1)
	if cfg.MessageTimestampType == TimestampLogAppendTime {
		logAppendTime = nowMs
	}
	target := targetCodec(cfg.CompressionType, b.Codec())
	limit := decompressionLimit(cfg.MaxMessageBytes)
	base := b.BaseTimestamp()
	check := func(r *record.Record) error {
		if logAppendTime < 0 {
			ts := base + r.TimestampDelta
			if timestampOutOfRange(ts, nowMs, cfg.MessageTimestampBeforeMaxMs, cfg.MessageTimestampAfterMaxMs) {
				return fmt.Errorf("%w: timestamp %d, now %d", ErrInvalidTimestamp, ts, nowMs)
			}
		}
		return nil
	}
	if target == b.Codec() {
		if err := record.Scan(b, limit, check); err != nil {
			return nil, -1, appendError(err)
		}
		return b, logAppendTime, nil
	}
	nb, err := record.RebuildLevel(b, target, cfg.compressionLevel(target), limit, check)
	if err != nil {
		return nil, -1, appendError(fmt.Errorf("recompressing to %s: %w", target, err))
	}
	return nb, logAppendTime, nil
}

// appendError gives a batch that expands past the decompression limit
// INVALID_RECORD. Kafka has no such limit, but it answers INVALID_RECORD
// (InvalidRecordException) for any batch whose decompressed records it
// cannot accept, and the choice matters to clients: CORRUPT_MESSAGE is
// retriable in the Java producer (CorruptRecordException is a
// RetriableException), which would resend the bomb until delivery.timeout,
// while INVALID_RECORD fails the send at once.
func appendError(err error) error {
	if errors.Is(err, record.ErrTooLarge) {
		return fmt.Errorf("%w: %w", ErrInvalidRecord, err)
	}
	return err
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
