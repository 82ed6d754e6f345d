package config

import (
	"math"
	"strconv"
	"strings"
)

// logKeys are the broker keys behind the topic keys of topic_keys.go that
// the core table lacks, the log cleaner's keys, and the controller quorum
// bootstrap key kbroker explains but does not support.
var logKeys = []brokerKey{
	func() brokerKey {
		k := intKey("log.roll.jitter.ms", "", "Most milliseconds randomly taken off a segment's log.roll.ms (topic: segment.jitter.ms). Default: log.roll.jitter.hours.", 0,
			func(c *Config) *int64 { return &c.LogRollJitterMs })
		k.derived = true
		return k
	}(),
	aliasInt("log.roll.jitter.hours", "0", "Roll jitter in hours, when log.roll.jitter.ms is not set.",
		func(b *builder) *int64 { return &b.rollJitterHours },
		func(c *Config) string { return strconv.FormatInt(c.LogRollJitterMs/msPerHour, 10) }),
	intKey("log.segment.delete.delay.ms", "60000", "Milliseconds between renaming a deleted segment's files to .deleted (or a deleted partition's directory to -delete) and removing them (topic: file.delete.delay.ms).", 0,
		func(c *Config) *int64 { return &c.LogSegmentDeleteDelayMs }),
	boolKey("log.preallocate", "false", "Preallocate a new segment's file to segment.bytes (topic: preallocate).",
		func(c *Config) *bool { return &c.LogPreallocate }),
	doubleKey("log.cleaner.min.cleanable.ratio", "0.5", "Dirty share of a compacted log's inactive bytes at which the cleaner takes it (topic: min.cleanable.dirty.ratio).", 0, 1,
		func(c *Config) *float64 { return &c.LogCleanerMinCleanableRatio }),
	intKey("log.cleaner.delete.retention.ms", "86400000", "How long tombstones are kept in compacted topics (topic: delete.retention.ms).", 0,
		func(c *Config) *int64 { return &c.LogCleanerDeleteRetentionMs }),
	intKey("log.cleaner.min.compaction.lag.ms", "0", "Least age of a record before it may be compacted (topic: min.compaction.lag.ms).", 0,
		func(c *Config) *int64 { return &c.LogCleanerMinCompactionLagMs }),
	intKey("log.cleaner.max.compaction.lag.ms", strconv.FormatInt(math.MaxInt64, 10), "Greatest age of an uncompacted record in a compacted topic (topic: max.compaction.lag.ms).", 1,
		func(c *Config) *int64 { return &c.LogCleanerMaxCompactionLagMs }),
	boolKey("log.cleaner.enable", "true", "Run the log cleaner (compacted topics are not compacted without it).",
		func(c *Config) *bool { return &c.LogCleanerEnable }),
	intKey("log.cleaner.backoff.ms", "15000", "Milliseconds between the cleaner's looks for a log to clean. Dynamic cluster-wide.", 1,
		func(c *Config) *int64 { return &c.LogCleanerBackoffMs }),
	intKey("log.cleaner.dedupe.buffer.size", "134217728", "Bytes of the cleaner's key maps (24 per key), shared out among the logs cleaned at once; a log with more dirty keys than fit is cleaned in several passes. Dynamic cluster-wide.", 1024,
		func(c *Config) *int64 { return &c.LogCleanerDedupeBufferSize }),
	doubleKey("log.cleaner.io.max.bytes.per.second", strconv.FormatFloat(math.MaxFloat64, 'g', -1, 64), "Bytes per second the cleaner reads and writes at most, across the logs it cleans at once. Dynamic cluster-wide.", math.SmallestNonzeroFloat64, math.MaxFloat64,
		func(c *Config) *float64 { return &c.LogCleanerIOMaxBytesPerSecond }),
	intKey("log.scrubber.bytes.per.second", "1048576", "Bytes per second the background scrubber reads to verify the CRC of every closed segment, one at a time; a corrupt batch is never served and is repaired from the leader. 0 turns it off. kbroker's own key (Redpanda and Ceph have a scrubber; Kafka does not).", 0,
		func(c *Config) *int64 { return &c.LogScrubberBytesPerSecond }),
	intKey("log.cleaner.threads", "1", "Logs the cleaner cleans at once (Kafka's cleaner threads); the dedupe buffer is shared out among them. Dynamic cluster-wide.", 1,
		func(c *Config) *int32 { return &c.LogCleanerThreads }),
	intKey("compression.gzip.level", "-1", "gzip level (1-9, or -1 for the codec's default) when the broker compresses (topic: compression.gzip.level).", -1,
		func(c *Config) *int32 { return &c.CompressionGzipLevel }),
	intKey("compression.lz4.level", "9", "lz4 level, 1-17, used when the broker recompresses to lz4: 9 is the fast compressor, other levels LZ4 HC, as Kafka (topic: compression.lz4.level).", minLz4Level,
		func(c *Config) *int32 { return &c.CompressionLz4Level }),
	intKey("compression.zstd.level", "3", "zstd level (-131072 to 22) when the broker compresses (topic: compression.zstd.level).", minZstdLevel,
		func(c *Config) *int32 { return &c.CompressionZstdLevel }),
	intKey("log.local.retention.ms", "-2", "Tiered storage: how long segments copied to remote storage stay on local disk; -2 means log.retention.ms (topic: local.retention.ms).", -2,
		func(c *Config) *int64 { return &c.LogLocalRetentionMs }),
	intKey("log.local.retention.bytes", "-2", "Tiered storage: local bytes a partition keeps of what is copied to remote storage; -2 means log.retention.bytes (topic: local.retention.bytes).", -2,
		func(c *Config) *int64 { return &c.LogLocalRetentionBytes }),
	{
		name: "remote.log.storage.system.enable", def: "false", typ: TypeBoolean,
		doc: "Tiered storage: topics with remote.storage.enable=true copy their closed segments to the S3-compatible store of the rsm.config.storage.* keys and serve them from there once local retention deleted them.",
		parse: func(b *builder, v string) error {
			x, err := parseBool(v)
			b.RemoteLogStorageSystemEnable = x
			return err
		},
		format: func(c *Config) string { return strconv.FormatBool(c.RemoteLogStorageSystemEnable) },
	},
	listKey("controller.quorum.bootstrap.servers", "", "Kafka's dynamic-quorum (KIP-853) bootstrap list. kbroker's quorum is static: controller.quorum.voters must be set; this key is then accepted and unused.",
		func(c *Config) *[]string { return &c.ControllerQuorumBootstrapServers }),
}

func doubleKey(name, def, doc string, min, max float64, f func(*Config) *float64) brokerKey {
	return brokerKey{
		name: name, def: def, doc: doc, typ: TypeDouble,
		parse: func(b *builder, v string) error {
			x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || math.IsNaN(x) {
				return errString(strconv.Quote(v) + " is not a number")
			}
			if x < min || x > max {
				return errString(strconv.Quote(v) + " is not between " + formatDouble(min) + " and " + formatDouble(max))
			}
			*f(&b.Config) = x
			return nil
		},
		format: func(c *Config) string { return formatDouble(*f(c)) },
	}
}

// checkLogKeys is the part of Validate for these keys: the ranges intKey
// cannot express.
func (c *Config) checkLogKeys() []error {
	var errs []error
	if c.CompressionGzipLevel == 0 || c.CompressionGzipLevel > 9 {
		errs = append(errs, invalid("compression.gzip.level", "%d is not -1 or a level from 1 to 9", c.CompressionGzipLevel))
	}
	if c.CompressionLz4Level > maxLz4Level {
		errs = append(errs, invalid("compression.lz4.level", "%d is more than the maximum %d", c.CompressionLz4Level, maxLz4Level))
	}
	if c.CompressionZstdLevel > maxZstdLevel {
		errs = append(errs, invalid("compression.zstd.level", "%d is more than the maximum %d", c.CompressionZstdLevel, maxZstdLevel))
	}
	return errs
}
