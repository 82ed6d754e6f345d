package record

import "fmt"

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
	// compression_level.go); 0 is the codec's default.
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
	b := NewBuilder(spec)
	for i := range records {
		if err := b.Add(&records[i]); err != nil {
			return nil, err
		}
	}
	return b.Finish()
}
