package config

import (
	"math"
	"regexp"
	"strconv"
	"strings"
)

// topicKeys is the table of topic keys: every topic-level key of Kafka
// 4.x, with Kafka's type, default (through the broker key), range and
// broker synonyms. Where a key acts in kbroker is said in its doc.
var topicKeys = []topicKey{
	{
		name: "cleanup.policy", brokerKey: "log.cleanup.policy", typ: TypeList,
		doc: "delete, compact, or compact,delete.",
		parse: func(t *TopicConfig, v string) (err error) {
			p, err := parseCleanupPolicy(v)
			if err == nil {
				t.CleanupPolicy = p
			}
			return err
		},
		format:  func(t *TopicConfig) string { return t.CleanupPolicy },
		inherit: func(t *TopicConfig, c *Config) { t.CleanupPolicy = c.LogCleanupPolicy },
	},
	topicEnum("compression.type", "compression.type", "Codec batches are stored with; producer keeps the producer's.", compressionTypes,
		func(t *TopicConfig) *string { return &t.CompressionType },
		func(c *Config) string { return c.CompressionType }),
	topicGzipLevel(),
	topicIntRange("compression.lz4.level", "compression.lz4.level", "lz4 level, 1-17, used when the broker recompresses to lz4: 9 is the fast compressor, other levels LZ4 HC, as Kafka.", minLz4Level, maxLz4Level,
		func(t *TopicConfig) *int32 { return &t.CompressionLz4Level },
		func(c *Config) int32 { return c.CompressionLz4Level }),
	topicIntRange("compression.zstd.level", "compression.zstd.level", "zstd level (-131072 to 22) of batches the broker compresses with compression.type=zstd.", minZstdLevel, maxZstdLevel,
		func(t *TopicConfig) *int32 { return &t.CompressionZstdLevel },
		func(c *Config) int32 { return c.CompressionZstdLevel }),
	withBound(topicInt("max.message.bytes", "message.max.bytes", "Largest record batch accepted, after compression; at most socket.request.max.bytes.", 0,
		func(t *TopicConfig) *int32 { return &t.MaxMessageBytes },
		func(c *Config) int32 { return c.MessageMaxBytes }),
		checkMaxMessageBytes),
	topicInt("min.insync.replicas", "min.insync.replicas", "Replicas that must have a batch before acks=all succeeds.", 1,
		func(t *TopicConfig) *int32 { return &t.MinInsyncReplicas },
		func(c *Config) int32 { return c.MinInsyncReplicas }),
	withAliases(topicInt("retention.ms", "log.retention.ms", "Age after which segments are deleted; -1 keeps them forever.", -1,
		func(t *TopicConfig) *int64 { return &t.RetentionMs },
		func(c *Config) int64 { return c.LogRetentionMs }), "log.retention.minutes", "log.retention.hours"),
	topicInt("retention.bytes", "log.retention.bytes", "Partition size above which old segments are deleted; -1 is no limit.", -1,
		func(t *TopicConfig) *int64 { return &t.RetentionBytes },
		func(c *Config) int64 { return c.LogRetentionBytes }),
	topicInt("segment.bytes", "log.segment.bytes", "Size at which a segment is rolled.", minSegmentBytes,
		func(t *TopicConfig) *int64 { return &t.SegmentBytes },
		func(c *Config) int64 { return c.LogSegmentBytes }),
	withAliases(topicInt("segment.ms", "log.roll.ms", "Age at which a segment is rolled (for compacted topics at most max.compaction.lag.ms).", 1,
		func(t *TopicConfig) *int64 { return &t.SegmentMs },
		func(c *Config) int64 { return c.LogRollMs }), "log.roll.hours"),
	withAliases(topicInt("segment.jitter.ms", "log.roll.jitter.ms", "Most milliseconds randomly taken off segment.ms for each segment, so that partitions do not all roll at once.", 0,
		func(t *TopicConfig) *int64 { return &t.SegmentJitterMs },
		func(c *Config) int64 { return c.LogRollJitterMs }), "log.roll.jitter.hours"),
	topicInt("segment.index.bytes", "log.index.size.max.bytes", "Largest offset index file.", 4,
		func(t *TopicConfig) *int32 { return &t.SegmentIndexBytes },
		func(c *Config) int32 { return c.LogIndexSizeMaxBytes }),
	topicInt("index.interval.bytes", "log.index.interval.bytes", "Bytes of log between offset index entries.", 0,
		func(t *TopicConfig) *int32 { return &t.IndexIntervalBytes },
		func(c *Config) int32 { return c.LogIndexIntervalBytes }),
	topicInt("flush.messages", "log.flush.interval.messages", "Messages appended before an fsync.", 1,
		func(t *TopicConfig) *int64 { return &t.FlushMessages },
		func(c *Config) int64 { return c.LogFlushIntervalMessages }),
	topicInt("flush.ms", "log.flush.interval.ms", "Milliseconds between fsyncs.", 0,
		func(t *TopicConfig) *int64 { return &t.FlushMs },
		func(c *Config) int64 {
			if c.LogFlushIntervalMs < 0 {
				return math.MaxInt64
			}
			return c.LogFlushIntervalMs
		}),
	topicInt("file.delete.delay.ms", "log.segment.delete.delay.ms", "A segment deleted by retention, DeleteRecords or truncation is renamed to .deleted, and a deleted partition's directory to <topic>-<partition>.<id>-delete; they are removed this many milliseconds later.", 0,
		func(t *TopicConfig) *int64 { return &t.FileDeleteDelayMs },
		func(c *Config) int64 { return c.LogSegmentDeleteDelayMs }),
	topicBool("preallocate", "log.preallocate", "Preallocate a new segment's file to segment.bytes (fallocate on Linux), trimmed to the data when the segment is rolled or closed.", nil,
		func(t *TopicConfig) *bool { return &t.Preallocate },
		func(c *Config) bool { return c.LogPreallocate }),
	topicEnum("message.timestamp.type", "log.message.timestamp.type", "Timestamp stored in batches.", timestampTypes,
		func(t *TopicConfig) *string { return &t.MessageTimestampType },
		func(c *Config) string { return c.LogMessageTimestampType }),
	topicInt("message.timestamp.before.max.ms", "log.message.timestamp.before.max.ms", "How far in the past a CreateTime timestamp may be.", 0,
		func(t *TopicConfig) *int64 { return &t.MessageTimestampBeforeMaxMs },
		func(c *Config) int64 { return c.LogMessageTimestampBeforeMaxMs }),
	topicInt("message.timestamp.after.max.ms", "log.message.timestamp.after.max.ms", "How far in the future a CreateTime timestamp may be.", 0,
		func(t *TopicConfig) *int64 { return &t.MessageTimestampAfterMaxMs },
		func(c *Config) int64 { return c.LogMessageTimestampAfterMaxMs }),
	topicBool("message.downconversion.enable", "", "Accepted; no effect (Kafka 4 removed down-conversion, and kbroker serves only record batch v2).", nil,
		func(t *TopicConfig) *bool { return &t.MessageDownconversionEnable },
		func(*Config) bool { return true }),
	topicBool("unclean.leader.election.enable", "unclean.leader.election.enable", "Elect a leader from outside the ISR when no ISR member is alive (may lose data).", nil,
		func(t *TopicConfig) *bool { return &t.UncleanLeaderElectionEnable },
		func(c *Config) bool { return c.UncleanLeaderElectionEnable }),
	{
		name: "min.cleanable.dirty.ratio", brokerKey: "log.cleaner.min.cleanable.ratio", typ: TypeDouble,
		doc: "The cleaner takes a compacted log once its dirty bytes reach this share of its inactive bytes (0 to 1).",
		parse: func(t *TopicConfig, v string) error {
			x, err := parseRatio(v)
			if err == nil {
				t.MinCleanableDirtyRatio = x
			}
			return err
		},
		format:  func(t *TopicConfig) string { return formatDouble(t.MinCleanableDirtyRatio) },
		inherit: func(t *TopicConfig, c *Config) { t.MinCleanableDirtyRatio = c.LogCleanerMinCleanableRatio },
	},
	topicInt("delete.retention.ms", "log.cleaner.delete.retention.ms", "Compacted topics: how long a tombstone (or removable transaction marker) is kept after the cleaning that first reaches it (its batch's delete horizon), for consumers to see it.", 0,
		func(t *TopicConfig) *int64 { return &t.DeleteRetentionMs },
		func(c *Config) int64 { return c.LogCleanerDeleteRetentionMs }),
	topicInt("min.compaction.lag.ms", "log.cleaner.min.compaction.lag.ms", "Compacted topics: a record stays uncompacted at least this long.", 0,
		func(t *TopicConfig) *int64 { return &t.MinCompactionLagMs },
		func(c *Config) int64 { return c.LogCleanerMinCompactionLagMs }),
	topicInt("max.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms", "Compacted topics: a record older than this is compacted whatever the dirty ratio (and the active segment rolls by then).", 1,
		func(t *TopicConfig) *int64 { return &t.MaxCompactionLagMs },
		func(c *Config) int64 { return c.LogCleanerMaxCompactionLagMs }),
	throttledReplicas("leader.replication.throttled.replicas", "Replicas (partition:broker, or *) whose leader-side replication is throttled to leader.replication.throttled.rate on that broker.",
		func(t *TopicConfig) *string { return &t.LeaderReplicationThrottledReplicas }),
	throttledReplicas("follower.replication.throttled.replicas", "Replicas (partition:broker, or *) whose follower-side replication is throttled to follower.replication.throttled.rate on that broker.",
		func(t *TopicConfig) *string { return &t.FollowerReplicationThrottledReplicas }),
	withBound(topicBool("remote.storage.enable", "", "Tiered storage: copy closed segments to remote storage (needs the broker's remote.log.storage.system.enable; not with cleanup.policy compact).", nil,
		func(t *TopicConfig) *bool { return &t.RemoteStorageEnable },
		func(*Config) bool { return false }), checkRemoteStorageEnable),
	topicInt("local.retention.ms", "log.local.retention.ms", "Tiered storage: how long segments copied to remote storage stay on local disk; -2 means retention.ms. Without remote.storage.enable retention.ms applies.", -2,
		func(t *TopicConfig) *int64 { return &t.LocalRetentionMs },
		func(c *Config) int64 { return c.LogLocalRetentionMs }),
	topicInt("local.retention.bytes", "log.local.retention.bytes", "Tiered storage: local bytes kept of what is copied to remote storage; -2 means retention.bytes. Without remote.storage.enable retention.bytes applies.", -2,
		func(t *TopicConfig) *int64 { return &t.LocalRetentionBytes },
		func(c *Config) int64 { return c.LogLocalRetentionBytes }),
	topicBool("remote.log.copy.disable", "", "Tiered storage: stop copying segments to remote storage. Accepted; no effect without tiered storage.", nil,
		func(t *TopicConfig) *bool { return &t.RemoteLogCopyDisable },
		func(*Config) bool { return false }),
	topicBool("remote.log.delete.on.disable", "", "Tiered storage: delete remote data when it is disabled. Accepted; no effect without tiered storage.", nil,
		func(t *TopicConfig) *bool { return &t.RemoteLogDeleteOnDisable },
		func(*Config) bool { return false }),
}

// Compression level ranges, as Kafka's CompressionType validators.
const (
	minLz4Level  = 1
	maxLz4Level  = 17
	minZstdLevel = -131072 // zstd's ZSTD_minCLevel
	maxZstdLevel = 22
)

func withAliases(k topicKey, aliases ...string) topicKey {
	k.aliases = aliases
	return k
}

// topicGzipLevel is compression.gzip.level: -1 (the codec's default) or
// 1 to 9.
func topicGzipLevel() topicKey {
	k := topicIntRange("compression.gzip.level", "compression.gzip.level", "gzip level (1-9, or -1 for the codec's default) of batches the broker compresses with compression.type=gzip.", -1, 9,
		func(t *TopicConfig) *int32 { return &t.CompressionGzipLevel },
		func(c *Config) int32 { return c.CompressionGzipLevel })
	parse := k.parse
	k.parse = func(t *TopicConfig, v string) error {
		if err := checkGzipLevel(v); err != nil {
			return err
		}
		return parse(t, v)
	}
	return k
}

func checkGzipLevel(v string) error {
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n == 0 {
		return errString(strconv.Quote(v) + " is not -1 or a level from 1 to 9")
	}
	return nil
}

// throttledReplica is one entry of a *.replication.throttled.replicas
// list: partition:broker.
var throttledReplica = regexp.MustCompile(`^[0-9]+:[0-9]+$`)

// parseThrottledReplicas checks Kafka's format: "" (none), "*" (all), or
// comma-separated partition:broker pairs. It returns the list normalised
// (entries trimmed).
func parseThrottledReplicas(v string) (string, error) {
	items := parseList(v)
	if len(items) == 1 && items[0] == "*" {
		return "*", nil
	}
	for _, it := range items {
		if !throttledReplica.MatchString(it) {
			return "", errString(strconv.Quote(v) + " is not * or a list of partition:broker (e.g. 0:1,1:2)")
		}
	}
	return strings.Join(items, ","), nil
}

func throttledReplicas(name, doc string, f func(*TopicConfig) *string) topicKey {
	return topicKey{
		name: name, doc: doc, typ: TypeList,
		parse: func(t *TopicConfig, v string) error {
			x, err := parseThrottledReplicas(v)
			if err == nil {
				*f(t) = x
			}
			return err
		},
		format:  func(t *TopicConfig) string { return *f(t) },
		inherit: func(t *TopicConfig, _ *Config) { *f(t) = "" },
	}
}

// parseRatio parses a DOUBLE in [0, 1].
func parseRatio(v string) (float64, error) {
	x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || math.IsNaN(x) {
		return 0, errString(strconv.Quote(v) + " is not a number")
	}
	if x < 0 || x > 1 {
		return 0, errString(strconv.Quote(v) + " is not between 0 and 1")
	}
	return x, nil
}

// formatDouble prints a float as Java's Double.toString does for the
// values configs hold: 0.5, 1.0.
func formatDouble(x float64) string {
	s := strconv.FormatFloat(x, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}

func withBound(k topicKey, bound func(t *TopicConfig, c *Config) error) topicKey {
	k.bound = bound
	return k
}

// checkMaxMessageBytes refuses a max.message.bytes (or message.max.bytes
// as a cluster-wide default) above socket.request.max.bytes: no request
// can carry such a batch, and the limit is what bounds how far the leader
// lets a compressed batch expand while validating it.
func checkMaxMessageBytes(t *TopicConfig, c *Config) error {
	if t.MaxMessageBytes > c.SocketRequestMaxBytes {
		return errString(strconv.Quote(strconv.FormatInt(int64(t.MaxMessageBytes), 10)) +
			" is larger than socket.request.max.bytes " + strconv.FormatInt(int64(c.SocketRequestMaxBytes), 10))
	}
	return nil
}
