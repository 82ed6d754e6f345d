package storage

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/kbroker/kbroker/wire/record"
)

// LogConfig is the per-topic log configuration, named after Kafka's topic
// properties.
type LogConfig struct {
	SegmentBytes       int64         `kafka:"segment.bytes"`        // default 1 GiB
	SegmentAge         time.Duration `kafka:"segment.ms"`           // default 7 days (roll when the active segment's first batch is older)
	IndexIntervalBytes int           `kafka:"index.interval.bytes"` // default 4096
	SegmentIndexBytes  int           `kafka:"segment.index.bytes"`  // default 10 MiB; roll when the index is full
	MaxMessageBytes    int           `kafka:"max.message.bytes"`    // default 1048588
	FlushMessages      int64         `kafka:"flush.messages"`       // <=0: never fsync on append
	FlushInterval      time.Duration `kafka:"flush.ms"`             // 0: never (Manager.Run flushes periodically)
	RetentionMs        int64         `kafka:"retention.ms"`         // default 7 days; -1: keep forever
	RetentionBytes     int64         `kafka:"retention.bytes"`      // default -1: no size limit
	// CleanupPolicy is cleanup.policy: "delete" (the default; "" means
	// it too), "compact", or both ("compact,delete"). With compact the
	// log cleaner keeps the latest record per key; without delete,
	// retention.ms and retention.bytes delete nothing.
	CleanupPolicy string `kafka:"cleanup.policy"`
	// MinCleanableDirtyRatio is min.cleanable.dirty.ratio (default 0.5):
	// the cleaner takes a log once its dirty bytes reach this share of
	// its inactive segments' bytes.
	MinCleanableDirtyRatio float64 `kafka:"min.cleanable.dirty.ratio"`
	// DeleteRetentionMs is delete.retention.ms (default 1 day): a
	// tombstone (null value) is dropped by cleaning once its segment's
	// largest timestamp is older than this.
	DeleteRetentionMs int64 `kafka:"delete.retention.ms"`
	// MinCompactionLagMs is min.compaction.lag.ms (default 0): segments
	// holding a record newer than this are not cleaned.
	MinCompactionLagMs int64 `kafka:"min.compaction.lag.ms"`
	// MaxCompactionLagMs is max.compaction.lag.ms (default MaxInt64): a
	// compacted log whose oldest dirty record is older than this is
	// cleaned whatever its dirty ratio, and its active segment rolls by
	// then.
	MaxCompactionLagMs int64 `kafka:"max.compaction.lag.ms"`
	// SegmentJitter is segment.jitter.ms (default 0): each segment rolls
	// by age a random amount in [0, SegmentJitter) before SegmentAge.
	SegmentJitter time.Duration `kafka:"segment.jitter.ms"`
	// FileDeleteDelayMs is file.delete.delay.ms (default 60000): a
	// segment deleted by retention keeps its files, renamed .deleted, this
	// long before the Manager removes them.
	FileDeleteDelayMs int64 `kafka:"file.delete.delay.ms"`
	// Preallocate is preallocate: a new active segment's .log is given
	// segment.bytes up front and trimmed at roll and close (prealloc.go).
	Preallocate bool `kafka:"preallocate"`
	// Compression levels the broker compresses with when it rewrites a
	// batch (compression.gzip.level, compression.lz4.level,
	// compression.zstd.level).
	CompressionGzipLevel int `kafka:"compression.gzip.level"`
	CompressionLz4Level  int `kafka:"compression.lz4.level"`
	CompressionZstdLevel int `kafka:"compression.zstd.level"`
	// CompressionType is compression.type: "producer" (the default: keep
	// the producer's codec), "uncompressed", gzip, snappy, lz4 or zstd. A
	// batch in another codec is rebuilt in this one.
	CompressionType string `kafka:"compression.type"`
	// MessageTimestampType is message.timestamp.type: CreateTime (the
	// default) or LogAppendTime.
	MessageTimestampType string `kafka:"message.timestamp.type"`
	// MessageTimestampBeforeMaxMs and MessageTimestampAfterMaxMs bound how
	// far a CreateTime timestamp may lie behind or ahead of the broker's
	// clock (INVALID_TIMESTAMP otherwise).
	MessageTimestampBeforeMaxMs int64 `kafka:"message.timestamp.before.max.ms"`
	MessageTimestampAfterMaxMs  int64 `kafka:"message.timestamp.after.max.ms"`
	// RemoteStorageEnable is remote.storage.enable on a broker with
	// remote.log.storage.system.enable: retention applies
	// LocalRetentionMs and LocalRetentionBytes (local.retention.ms and
	// local.retention.bytes; -2: retention.ms and retention.bytes) to
	// the segments the remote store holds (tiered.go).
	RemoteStorageEnable bool  `kafka:"remote.storage.enable"`
	LocalRetentionMs    int64 `kafka:"local.retention.ms"`
	LocalRetentionBytes int64 `kafka:"local.retention.bytes"`
}

// Timestamp types (message.timestamp.type values).
const (
	TimestampCreateTime    = "CreateTime"
	TimestampLogAppendTime = "LogAppendTime"
)

// Cleanup policies (cleanup.policy values).
const (
	CleanupPolicyDelete  = "delete"
	CleanupPolicyCompact = "compact"
)

// parsePolicy splits cleanup.policy into its two flags; "" is delete.
func parsePolicy(p string) (compact, del bool, err error) {
	if strings.TrimSpace(p) == "" {
		return false, true, nil
	}
	for _, part := range strings.Split(p, ",") {
		switch strings.ToLower(strings.TrimSpace(part)) {
		case CleanupPolicyCompact:
			compact = true
		case CleanupPolicyDelete:
			del = true
		default:
			return false, false, fmt.Errorf("cleanup.policy: %q: unknown policy %q", p, part)
		}
	}
	return compact, del, nil
}

// Compact reports whether cleanup.policy includes compact.
func (c LogConfig) Compact() bool {
	compact, _, _ := parsePolicy(c.CleanupPolicy)
	return compact
}

// Delete reports whether cleanup.policy includes delete (retention.ms and
// retention.bytes apply).
func (c LogConfig) Delete() bool {
	_, del, err := parsePolicy(c.CleanupPolicy)
	return del || err != nil
}

// DefaultLogConfig returns Kafka's defaults.
func DefaultLogConfig() LogConfig {
	return LogConfig{
		SegmentBytes:       1 << 30,
		SegmentAge:         7 * 24 * time.Hour,
		IndexIntervalBytes: 4096,
		SegmentIndexBytes:  10 << 20,
		MaxMessageBytes:    1048588,
		RetentionMs:        (7 * 24 * time.Hour).Milliseconds(),
		RetentionBytes:     -1,

		CleanupPolicy:          CleanupPolicyDelete,
		MinCleanableDirtyRatio: 0.5,
		DeleteRetentionMs:      (24 * time.Hour).Milliseconds(),
		MinCompactionLagMs:     0,
		MaxCompactionLagMs:     math.MaxInt64,
		FileDeleteDelayMs:      60000,

		CompressionGzipLevel: -1,
		CompressionLz4Level:  9,
		CompressionZstdLevel: 3,

		CompressionType:             "producer",
		MessageTimestampType:        TimestampCreateTime,
		MessageTimestampBeforeMaxMs: math.MaxInt64,
		MessageTimestampAfterMaxMs:  3600000,
		LocalRetentionMs:            -2,
		LocalRetentionBytes:         -2,
	}
}

// Validate names the first bad property and its value.
func (c LogConfig) Validate() error {
	switch {
	case c.SegmentBytes < 14:
		return fmt.Errorf("segment.bytes: %d must be at least 14", c.SegmentBytes)
	case c.SegmentAge < 0:
		return fmt.Errorf("segment.ms: %v must not be negative", c.SegmentAge)
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
	case c.MinCleanableDirtyRatio < 0 || c.MinCleanableDirtyRatio > 1 || c.MinCleanableDirtyRatio != c.MinCleanableDirtyRatio:
		return fmt.Errorf("min.cleanable.dirty.ratio: %v must be in [0, 1]", c.MinCleanableDirtyRatio)
	case c.DeleteRetentionMs < 0:
		return fmt.Errorf("delete.retention.ms: %d must not be negative", c.DeleteRetentionMs)
	case c.MinCompactionLagMs < 0:
		return fmt.Errorf("min.compaction.lag.ms: %d must not be negative", c.MinCompactionLagMs)
	case c.MaxCompactionLagMs < 1:
		return fmt.Errorf("max.compaction.lag.ms: %d must be at least 1", c.MaxCompactionLagMs)
	case c.SegmentJitter < 0:
		return fmt.Errorf("segment.jitter.ms: %v must not be negative", c.SegmentJitter)
	case c.LocalRetentionMs < -2:
		return fmt.Errorf("local.retention.ms: %d must be at least -2", c.LocalRetentionMs)
	case c.LocalRetentionBytes < -2:
		return fmt.Errorf("local.retention.bytes: %d must be at least -2", c.LocalRetentionBytes)
	case c.FileDeleteDelayMs < 0:
		return fmt.Errorf("file.delete.delay.ms: %d must not be negative", c.FileDeleteDelayMs)
	}
	if _, _, err := parsePolicy(c.CleanupPolicy); err != nil {
		return err
	}
	return nil
}

// maxSegmentMs is how old the active segment may grow: segment.ms, and
// for a compacted log at most max.compaction.lag.ms, so that a record
// becomes cleanable (it must leave the active segment) within that lag,
// as Kafka's LogConfig.maxSegmentMs.
func (c LogConfig) maxSegmentMs() int64 {
	ms := c.SegmentAge.Milliseconds()
	if c.Compact() && c.MaxCompactionLagMs > 0 && c.MaxCompactionLagMs < ms {
		return c.MaxCompactionLagMs
	}
	return ms
}

// compressionLevel is the compression.<codec>.level for codec (0, the
// codec's default, for codecs without one).
func (c LogConfig) compressionLevel(codec record.Codec) int {
	switch codec {
	case record.CodecGzip:
		return c.CompressionGzipLevel
	case record.CodecLZ4:
		return c.CompressionLz4Level
	case record.CodecZstd:
		return c.CompressionZstdLevel
	}
	return 0
}
