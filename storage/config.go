package storage

import (
	"fmt"
	"time"
)

// LogConfig is the per-topic log configuration, named after Kafka's topic
// properties.
type LogConfig struct {
	SegmentBytes       int64         `kafka:"segment.bytes"`        // default 1 GiB
	SegmentMs          time.Duration `kafka:"segment.ms"`           // default 7 days (roll when the active segment's first batch is older)
	IndexIntervalBytes int           `kafka:"index.interval.bytes"` // default 4096
	SegmentIndexBytes  int           `kafka:"segment.index.bytes"`  // default 10 MiB; roll when the index is full
	MaxMessageBytes    int           `kafka:"max.message.bytes"`    // default 1048588
	FlushMessages      int64         `kafka:"flush.messages"`       // <=0: never fsync on append
	FlushInterval      time.Duration `kafka:"flush.ms"`             // 0: never (Manager.Run flushes periodically)
	RetentionMs        int64         `kafka:"retention.ms"`         // default 7 days; -1: keep forever
	RetentionBytes     int64         `kafka:"retention.bytes"`      // default -1: no size limit
}

// DefaultLogConfig returns Kafka's defaults.
func DefaultLogConfig() LogConfig {
	return LogConfig{
		SegmentBytes:       1 << 30,
		SegmentMs:          7 * 24 * time.Hour,
		IndexIntervalBytes: 4096,
		SegmentIndexBytes:  10 << 20,
		MaxMessageBytes:    1048588,
		RetentionMs:        (7 * 24 * time.Hour).Milliseconds(),
		RetentionBytes:     -1,
	}
}

// Validate names the first bad property and its value.
func (c LogConfig) Validate() error {
	switch {
	case c.SegmentBytes < 14:
		return fmt.Errorf("segment.bytes: %d must be at least 14", c.SegmentBytes)
	case c.SegmentMs < 0:
		return fmt.Errorf("segment.ms: %v must not be negative", c.SegmentMs)
	case c.IndexIntervalBytes < 0:
		return fmt.Errorf("index.interval.bytes: %d must not be negative", c.IndexIntervalBytes)
	case c.SegmentIndexBytes < indexEntrySize:
		return fmt.Errorf("segment.index.bytes: %d must be at least %d", c.SegmentIndexBytes, indexEntrySize)
	case c.MaxMessageBytes < 0:
		return fmt.Errorf("max.message.bytes: %d must not be negative", c.MaxMessageBytes)
	case c.FlushInterval < 0:
		return fmt.Errorf("flush.ms: %v must not be negative", c.FlushInterval)
	case c.RetentionMs < -1:
		return fmt.Errorf("retention.ms: %d must be at least -1", c.RetentionMs)
	case c.RetentionBytes < -1:
		return fmt.Errorf("retention.bytes: %d must be at least -1", c.RetentionBytes)
	}
	return nil
}
