package record

import (
	"encoding/binary"
	"fmt"
)

// BatchSpec is the header of a batch to Build. The codec bits of
// Attributes decide the compression.
type BatchSpec struct {
	BaseOffset           int64
	PartitionLeaderEpoch int32
	Attributes           int16
	BaseTimestamp        int64
	MaxTimestamp         int64 // if 0, BaseTimestamp + the largest TimestampDelta
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	// Level is the Kafka compression level of the codec (see
	// CompressLevel); 0 is the codec's default.
	Level int
}

// Build builds a fresh v2 batch (for tests, the broker's recompression, and
// internal topics) from spec and records, taken as given: callers number
// OffsetDelta 0, 1, 2, ... It sets recordCount, lastOffsetDelta (the last
// record's OffsetDelta), batchLength and the CRC. records may not be empty:
// Kafka rejects an empty batch.
func Build(spec BatchSpec, records []Record) (Batch, error) {
	if len(records) == 0 {
		return nil, fmt.Errorf("%w: no records", ErrInvalid)
	}
	codec := Codec(spec.Attributes & CompressionMask)
	if codec > CodecZstd {
		return nil, fmt.Errorf("%w: unknown compression codec %d", ErrInvalid, codec)
	}

	maxTS := spec.MaxTimestamp
	if maxTS == 0 {
		maxDelta := records[0].TimestampDelta
		for i := range records {
			maxDelta = max(maxDelta, records[i].TimestampDelta)
		}
		maxTS = spec.BaseTimestamp + maxDelta
	}

	b := make([]byte, HeaderSize, HeaderSize+64*len(records))
	if codec == CodecNone {
		for i := range records {
			b = AppendRecord(b, &records[i])
		}
	} else {
		var raw []byte
		for i := range records {
			raw = AppendRecord(raw, &records[i])
		}
		var err error
		if b, err = CompressLevel(codec, spec.Level, b, raw); err != nil {
			return nil, err
		}
	}
	if len(b)-LogOverhead > 1<<31-1 {
		return nil, fmt.Errorf("%w: batch of %d bytes", ErrTooLarge, len(b))
	}

	be := binary.BigEndian
	be.PutUint64(b[baseOffsetOffset:], uint64(spec.BaseOffset))
	be.PutUint32(b[batchLengthOffset:], uint32(len(b)-LogOverhead))
	be.PutUint32(b[partitionLeaderEpochOffset:], uint32(spec.PartitionLeaderEpoch))
	b[magicOffset] = MagicV2
	be.PutUint16(b[attributesOffset:], uint16(spec.Attributes))
	be.PutUint32(b[lastOffsetDeltaOffset:], uint32(records[len(records)-1].OffsetDelta))
	be.PutUint64(b[baseTimestampOffset:], uint64(spec.BaseTimestamp))
	be.PutUint64(b[maxTimestampOffset:], uint64(maxTS))
	be.PutUint64(b[producerIDOffset:], uint64(spec.ProducerID))
	be.PutUint16(b[producerEpochOffset:], uint16(spec.ProducerEpoch))
	be.PutUint32(b[baseSequenceOffset:], uint32(spec.BaseSequence))
	be.PutUint32(b[recordCountOffset:], uint32(len(records)))
	batch := Batch(b)
	batch.SetCRC()
	return batch, nil
}
