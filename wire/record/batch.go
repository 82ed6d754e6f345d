package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Header field offsets within a batch.
const (
	baseOffsetOffset           = 0
	batchLengthOffset          = 8
	partitionLeaderEpochOffset = 12
	magicOffset                = 16
	crcOffset                  = 17
	attributesOffset           = 21
	lastOffsetDeltaOffset      = 23
	baseTimestampOffset        = 27
	maxTimestampOffset         = 35
	producerIDOffset           = 43
	producerEpochOffset        = 51
	baseSequenceOffset         = 53
	recordCountOffset          = 57

	// HeaderSize is the size of the v2 batch header.
	HeaderSize = 61
	// LogOverhead is the part of the header not counted in batchLength.
	LogOverhead = 12
	// MagicV2 is the only record format kbroker accepts.
	MagicV2 = 2
)

// Attribute bits.
const (
	CompressionMask      = 0x07
	TimestampTypeMask    = 0x08
	TransactionalFlag    = 0x10
	ControlFlag          = 0x20
	DeleteHorizonFlag    = 0x40
	NoProducerID         = -1
	NoSequence           = -1
	NoPartitionLeaderEpo = -1
)

// Compression codecs as encoded in the attributes.
type Codec int8

const (
	CodecNone   Codec = 0
	CodecGzip   Codec = 1
	CodecSnappy Codec = 2
	CodecLZ4    Codec = 3
	CodecZstd   Codec = 4
)

func (c Codec) String() string {
	switch c {
	case CodecNone:
		return "none"
	case CodecGzip:
		return "gzip"
	case CodecSnappy:
		return "snappy"
	case CodecLZ4:
		return "lz4"
	case CodecZstd:
		return "zstd"
	}
	return fmt.Sprintf("codec(%d)", int8(c))
}

// Errors from parsing a batch. ErrCorrupt maps to CORRUPT_MESSAGE,
// ErrInvalid to INVALID_RECORD.
var (
	ErrTruncated = errors.New("record: batch truncated")
	ErrCorrupt   = errors.New("record: corrupt batch")
	ErrInvalid   = errors.New("record: invalid batch")
	ErrMagic     = errors.New("record: unsupported magic")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Batch is a view over the bytes of exactly one v2 record batch. Setters
// write through to the underlying slice.
type Batch []byte

// Size returns the total size of the batch at the start of b according to
// its header (LogOverhead + batchLength), or an error if b is too short to
// hold a header or the length field is impossible.
func PeekSize(b []byte) (int, error) {
	if len(b) < LogOverhead {
		return 0, ErrTruncated
	}
	n := int32(binary.BigEndian.Uint32(b[batchLengthOffset:]))
	if n < HeaderSize-LogOverhead {
		return 0, fmt.Errorf("%w: batchLength %d below header size", ErrCorrupt, n)
	}
	return LogOverhead + int(n), nil
}

// Parse returns the first batch in b (checking only that the header is
// present, the length fits and the magic is 2) and the bytes after it.
func Parse(b []byte) (Batch, []byte, error) {
	size, err := PeekSize(b)
	if err != nil {
		return nil, b, err
	}
	if len(b) < HeaderSize || len(b) < size {
		return nil, b, ErrTruncated
	}
	if m := b[magicOffset]; m != MagicV2 {
		return nil, b, fmt.Errorf("%w: %d", ErrMagic, m)
	}
	return Batch(b[:size:size]), b[size:], nil
}

func (b Batch) BaseOffset() int64 { return int64(binary.BigEndian.Uint64(b[baseOffsetOffset:])) }
func (b Batch) BatchLength() int32 {
	return int32(binary.BigEndian.Uint32(b[batchLengthOffset:]))
}
func (b Batch) PartitionLeaderEpoch() int32 {
	return int32(binary.BigEndian.Uint32(b[partitionLeaderEpochOffset:]))
}
func (b Batch) Magic() int8         { return int8(b[magicOffset]) }
func (b Batch) CRC() uint32         { return binary.BigEndian.Uint32(b[crcOffset:]) }
func (b Batch) Attributes() int16   { return int16(binary.BigEndian.Uint16(b[attributesOffset:])) }
func (b Batch) Codec() Codec        { return Codec(b.Attributes() & CompressionMask) }
func (b Batch) LogAppendTime() bool { return b.Attributes()&TimestampTypeMask != 0 }
func (b Batch) IsTransactional() bool {
	return b.Attributes()&TransactionalFlag != 0
}
func (b Batch) IsControl() bool { return b.Attributes()&ControlFlag != 0 }
func (b Batch) LastOffsetDelta() int32 {
	return int32(binary.BigEndian.Uint32(b[lastOffsetDeltaOffset:]))
}
func (b Batch) BaseTimestamp() int64 {
	return int64(binary.BigEndian.Uint64(b[baseTimestampOffset:]))
}
func (b Batch) MaxTimestamp() int64 {
	return int64(binary.BigEndian.Uint64(b[maxTimestampOffset:]))
}
func (b Batch) ProducerID() int64 { return int64(binary.BigEndian.Uint64(b[producerIDOffset:])) }
func (b Batch) ProducerEpoch() int16 {
	return int16(binary.BigEndian.Uint16(b[producerEpochOffset:]))
}
func (b Batch) BaseSequence() int32 {
	return int32(binary.BigEndian.Uint32(b[baseSequenceOffset:]))
}
func (b Batch) RecordCount() int32 {
	return int32(binary.BigEndian.Uint32(b[recordCountOffset:]))
}

// LastOffset is baseOffset + lastOffsetDelta.
func (b Batch) LastOffset() int64 { return b.BaseOffset() + int64(b.LastOffsetDelta()) }

// LastSequence is the sequence of the last record, wrapping like Kafka's
// DefaultRecordBatch.incrementSequence.
func (b Batch) LastSequence() int32 {
	seq := b.BaseSequence()
	if seq == NoSequence {
		return NoSequence
	}
	return IncrementSequence(seq, b.LastOffsetDelta())
}

// IncrementSequence adds delta to seq, wrapping past MaxInt32 to 0.
func IncrementSequence(seq, delta int32) int32 {
	if seq > (1<<31-1)-delta {
		return delta - ((1<<31 - 1) - seq) - 1
	}
	return seq + delta
}

// Records returns the (possibly compressed) records section.
func (b Batch) Records() []byte { return b[HeaderSize:] }

// ComputeCRC returns the CRC-32C of bytes 21..end.
func (b Batch) ComputeCRC() uint32 { return crc32.Checksum(b[attributesOffset:], castagnoli) }

// ValidCRC reports whether the stored CRC matches the contents.
func (b Batch) ValidCRC() bool { return b.CRC() == b.ComputeCRC() }

// SetLastOffset sets baseOffset so that the batch's last offset is
// lastOffset (Kafka's setLastOffset). The CRC is unaffected.
func (b Batch) SetLastOffset(lastOffset int64) {
	binary.BigEndian.PutUint64(b[baseOffsetOffset:], uint64(lastOffset-int64(b.LastOffsetDelta())))
}

// SetBaseOffset sets baseOffset. The CRC is unaffected.
func (b Batch) SetBaseOffset(off int64) {
	binary.BigEndian.PutUint64(b[baseOffsetOffset:], uint64(off))
}

// SetPartitionLeaderEpoch sets partitionLeaderEpoch. The CRC is unaffected.
func (b Batch) SetPartitionLeaderEpoch(epoch int32) {
	binary.BigEndian.PutUint32(b[partitionLeaderEpochOffset:], uint32(epoch))
}

// SetMaxTimestamp sets the timestamp type and maxTimestamp and recomputes
// the CRC, as Kafka's setMaxTimestamp does; it is a no-op when nothing
// changes, so a batch that needs no rewrite keeps its CRC.
func (b Batch) SetMaxTimestamp(logAppendTime bool, ts int64) {
	attrs := b.Attributes()
	newAttrs := attrs &^ TimestampTypeMask
	if logAppendTime {
		newAttrs |= TimestampTypeMask
	}
	if newAttrs == attrs && b.MaxTimestamp() == ts {
		return
	}
	binary.BigEndian.PutUint16(b[attributesOffset:], uint16(newAttrs))
	binary.BigEndian.PutUint64(b[maxTimestampOffset:], uint64(ts))
	binary.BigEndian.PutUint32(b[crcOffset:], b.ComputeCRC())
}

// SetCRC recomputes and stores the CRC (for batches built by the broker).
func (b Batch) SetCRC() { binary.BigEndian.PutUint32(b[crcOffset:], b.ComputeCRC()) }
