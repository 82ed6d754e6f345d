package config

import (
	"sort"
	"strings"
)

// ignoredKey is a Kafka 4.x broker key that has no meaning in kbroker: a
// server.properties written for Kafka sets it, so Load accepts it, the
// startup warning lists it once, and DescribeConfigs shows its value.
type ignoredKey struct {
	name string
	typ  int8
	why  string
}

// IgnoredSetting is an ignored Kafka key that a source set.
type IgnoredSetting struct {
	Name   string
	Value  string
	Source string // "file:line", "env NAME" or "--set"
}

// Reasons shared by many keys.
const (
	whyThreads  = "kbroker's goroutines are not sized by thread pools"
	whySockets  = "socket buffers are left to the operating system"
	whyMetrics  = "metrics are served as Prometheus text on admin.listener"
	whyJVM      = "a Java/JVM setting"
	whyRaft     = "the metadata quorum runs on hashicorp/raft with its own timeouts"
	whyMetaLog  = "the metadata log is hashicorp/raft's, snapshotted by its own rules"
	whyNoTier   = "tiered storage is built in: no plugins, no remote quotas yet"
	whyNoPolicy = "no pluggable Java policies"
	whyPurge    = "no purgatory purge intervals: waiting requests are removed when they complete"
	whyNewGroup = "KIP-848 groups use fixed bounds"
	whyQuota    = "no log-dir move quotas"
	whyNoShare  = "share groups use Kafka's default bounds and thread model for these"
	whyFetch    = "replication fetches are sized by replica.fetch.max.bytes and replica.fetch.wait.max.ms"
)

// ignoredKeys lists the Kafka 4.x broker keys kbroker accepts and
// ignores. Security, transaction and connection keys are not here: the
// packages that implement them define them.
var ignoredKeys = []ignoredKey{
	// Threads and sockets.
	{"num.network.threads", TypeInt, whyThreads},
	{"num.io.threads", TypeInt, whyThreads},
	{"num.replica.fetchers", TypeInt, whyThreads},
	{"num.replica.alter.log.dirs.threads", TypeInt, whyThreads},
	{"num.recovery.threads.per.data.dir", TypeInt, whyThreads},
	{"background.threads", TypeInt, whyThreads},
	{"log.cleaner.io.buffer.size", TypeInt, "the cleaner reads and writes through its own buffers"},
	{"log.cleaner.io.buffer.load.factor", TypeDouble, "the key map's load factor is fixed (0.9, as Kafka's default)"},
	{"queued.max.requests", TypeInt, "requests are bounded in bytes by queued.max.request.bytes"},
	{"socket.send.buffer.bytes", TypeInt, whySockets},
	{"socket.receive.buffer.bytes", TypeInt, whySockets},
	{"socket.listen.backlog.size", TypeInt, whySockets},
	{"replica.socket.receive.buffer.bytes", TypeInt, whySockets},
	{"replica.socket.timeout.ms", TypeInt, "followers fetch with replica.fetch.wait.max.ms and their own timeouts"},
	{"replica.fetch.min.bytes", TypeInt, whyFetch},
	{"replica.fetch.response.max.bytes", TypeInt, whyFetch},
	{"replica.fetch.backoff.ms", TypeInt, whyFetch},
	{"replica.high.watermark.checkpoint.interval.ms", TypeLong, "high watermarks are checkpointed every 5 s"},
	{"replica.selector.class", TypeString, "consumers fetch from leaders only"},
	{"fetch.max.bytes", TypeInt, "a fetch response is bounded by the request's own MaxBytes"},
	{"fetch.purgatory.purge.interval.requests", TypeInt, whyPurge},
	{"producer.purgatory.purge.interval.requests", TypeInt, whyPurge},
	{"delete.records.purgatory.purge.interval.requests", TypeInt, whyPurge},
	{"share.fetch.purgatory.purge.interval.requests", TypeInt, whyPurge},
	{"replica.alter.log.dirs.io.max.bytes.per.second", TypeLong, "no AlterReplicaLogDirs"},
	{"unclean.leader.election.interval.ms", TypeLong, "unclean elections are checked when a partition loses its ISR"},

	// Metrics and JVM.
	{"metric.reporters", TypeList, whyMetrics},
	{"metrics.num.samples", TypeInt, whyMetrics},
	{"metrics.recording.level", TypeString, whyMetrics},
	{"metrics.sample.window.ms", TypeLong, whyMetrics},
	{"kafka.metrics.reporters", TypeList, whyMetrics},
	{"kafka.metrics.polling.interval.secs", TypeInt, whyMetrics},
	{"telemetry.max.bytes", TypeInt, "no client telemetry (KIP-714)"},
	{"config.providers", TypeList, whyJVM},

	// Log housekeeping intervals kbroker fixes itself.
	{"log.flush.scheduler.interval.ms", TypeLong, "flush.ms is checked every 100 ms"},
	{"log.flush.offset.checkpoint.interval.ms", TypeInt, "recovery points are checkpointed at each flush and at close"},
	{"log.flush.start.offset.checkpoint.interval.ms", TypeInt, "log start offsets are checkpointed every 5 s"},
	{"log.dir.failure.timeout.ms", TypeLong, "a failed log directory stops its partitions' logs"},
	{"log.initial.task.delay.ms", TypeLong, "background tasks start with the broker"},
	{"delete.topic.enable", TypeBoolean, "topics can always be deleted (DeleteTopics)"},
	{"create.topic.policy.class.name", TypeClass, whyNoPolicy},
	{"alter.config.policy.class.name", TypeClass, whyNoPolicy},
	{"client.quota.callback.class", TypeClass, whyNoPolicy},

	// KRaft controller quorum and metadata log.
	{"controller.quorum.election.timeout.ms", TypeInt, whyRaft},
	{"controller.quorum.election.backoff.max.ms", TypeInt, whyRaft},
	{"controller.quorum.fetch.timeout.ms", TypeInt, whyRaft},
	{"controller.quorum.append.linger.ms", TypeInt, whyRaft},
	{"controller.quorum.request.timeout.ms", TypeInt, whyRaft},
	{"controller.quorum.retry.backoff.ms", TypeInt, whyRaft},
	{"controller.quorum.fetch.snapshot.max.bytes", TypeInt, whyRaft},
	{"controller.quorum.fetch.max.bytes", TypeInt, whyRaft},
	{"controller.socket.timeout.ms", TypeInt, whyRaft},
	{"controller.performance.sample.period.ms", TypeLong, whyMetrics},
	{"controller.performance.always.log.threshold.ms", TypeLong, whyMetrics},
	{"metadata.log.segment.bytes", TypeInt, whyMetaLog},
	{"metadata.log.segment.ms", TypeLong, whyMetaLog},
	{"metadata.log.segment.min.bytes", TypeInt, whyMetaLog},
	{"metadata.log.max.record.bytes.between.snapshots", TypeLong, whyMetaLog},
	{"metadata.log.max.snapshot.interval.ms", TypeLong, whyMetaLog},
	{"metadata.max.retention.bytes", TypeLong, whyMetaLog},
	{"metadata.max.retention.ms", TypeLong, whyMetaLog},
	{"metadata.max.idle.interval.ms", TypeInt, whyMetaLog},
	{"initial.broker.registration.timeout.ms", TypeInt, "a broker registers through the Raft log when it starts"},
	{"broker.id.generation.enable", TypeBoolean, "node.id is always given"},
	{"broker.id", TypeInt, "node.id names the node (Kafka's older name; it must equal node.id when given)"},
	{"controlled.shutdown.max.retries", TypeInt, "controlled shutdown waits for the controller with its own deadline"},
	{"controlled.shutdown.retry.backoff.ms", TypeLong, "controlled shutdown waits for the controller with its own deadline"},
	{"cordoned.log.dirs", TypeList, "new partitions go to the log directory holding the fewest"},
	{"leader.imbalance.per.broker.percentage", TypeInt, "leadership moves back whenever the preferred replica can lead"},
	{"eligible.leader.replicas.enable", TypeBoolean, "no eligible leader replicas (KIP-966)"},
	{"unstable.api.versions.enable", TypeBoolean, "kbroker serves only the versions it implements"},
	{"unstable.feature.versions.enable", TypeBoolean, "kbroker serves only the versions it implements"},
	{"early.start.listeners", TypeString, "listeners start once the node has loaded its metadata"},
	{"server.max.startup.time.ms", TypeLong, "startup is bounded by the metadata log's catch-up"},

	// Groups and offsets.
	{"group.min.session.timeout.ms", TypeInt, "the classic group session timeout bounds are Kafka's defaults (6 s to 30 min)"},
	{"group.max.session.timeout.ms", TypeInt, "the classic group session timeout bounds are Kafka's defaults (6 s to 30 min)"},
	{"group.max.size", TypeInt, "classic groups have no size limit"},
	{"group.coordinator.rebalance.protocols", TypeList, whyNewGroup},
	{"group.coordinator.threads", TypeInt, whyThreads},
	{"group.coordinator.append.linger.ms", TypeInt, "offset commits are appended at once"},
	{"group.consumer.min.session.timeout.ms", TypeInt, whyNewGroup},
	{"group.consumer.max.session.timeout.ms", TypeInt, whyNewGroup},
	{"group.consumer.min.heartbeat.interval.ms", TypeInt, whyNewGroup},
	{"group.consumer.max.heartbeat.interval.ms", TypeInt, whyNewGroup},
	{"group.consumer.max.size", TypeInt, whyNewGroup},
	{"group.share.enable", TypeBoolean, whyNoShare},
	{"group.share.min.session.timeout.ms", TypeInt, whyNoShare},
	{"group.share.max.session.timeout.ms", TypeInt, whyNoShare},
	{"group.share.min.heartbeat.interval.ms", TypeInt, whyNoShare},
	{"group.share.max.heartbeat.interval.ms", TypeInt, whyNoShare},
	{"group.share.max.groups", TypeShort, whyNoShare},
	{"share.coordinator.threads", TypeInt, whyNoShare},
	{"share.coordinator.append.linger.ms", TypeInt, whyNoShare},
	{"share.coordinator.load.buffer.size", TypeInt, whyNoShare},
	{"share.coordinator.snapshot.update.records.per.snapshot", TypeInt, whyNoShare},
	{"share.coordinator.state.topic.compression.codec", TypeInt, whyNoShare},
	{"share.coordinator.state.topic.segment.bytes", TypeInt, whyNoShare},
	{"share.coordinator.write.timeout.ms", TypeInt, whyNoShare},
	{"offsets.load.buffer.size", TypeInt, "the offsets topic is read through its own buffers"},
	{"offsets.commit.timeout.ms", TypeInt, "an offset commit waits for the offsets topic's acks=all with the request's deadline"},
	{"offsets.retention.check.interval.ms", TypeLong, "expired offsets are checked with the group's own timer"},
	{"offsets.topic.segment.bytes", TypeInt, "__consumer_offsets uses the broker's segment defaults"},
	{"offsets.topic.compression.codec", TypeInt, "offset commits are written uncompressed"},
	{"offset.metadata.max.bytes", TypeInt, "commit metadata is bounded by the request size"},

	// Quotas.
	{"alter.log.dirs.replication.quota.window.num", TypeInt, whyQuota},
	{"alter.log.dirs.replication.quota.window.size.seconds", TypeInt, whyQuota},

	// Tiered storage: the plugin and metadata-manager keys (kbroker's are built in, remote_keys.go) and the quotas not implemented.
	{"remote.log.storage.manager.class.name", TypeString, whyNoTier},
	{"remote.log.storage.manager.class.path", TypeString, whyNoTier},
	{"remote.log.storage.manager.impl.prefix", TypeString, whyNoTier},
	{"remote.log.metadata.manager.class.name", TypeString, whyNoTier},
	{"remote.log.metadata.manager.class.path", TypeString, whyNoTier},
	{"remote.log.metadata.manager.impl.prefix", TypeString, whyNoTier},
	{"remote.log.metadata.manager.listener.name", TypeString, whyNoTier},
	{"remote.log.index.file.cache.total.size.bytes", TypeLong, whyNoTier},
	{"remote.log.manager.thread.pool.size", TypeInt, whyNoTier},
	{"remote.log.manager.expiration.thread.pool.size", TypeInt, whyNoTier},
	{"remote.log.reader.max.pending.tasks", TypeInt, whyNoTier},
	{"remote.list.offsets.request.timeout.ms", TypeLong, whyNoTier},
	{"remote.log.manager.copy.max.bytes.per.second", TypeLong, whyNoTier},
	{"remote.log.manager.copy.quota.window.num", TypeInt, whyNoTier},
	{"remote.log.manager.copy.quota.window.size.seconds", TypeInt, whyNoTier},
	{"remote.log.manager.fetch.max.bytes.per.second", TypeLong, whyNoTier},
	{"remote.log.manager.fetch.quota.window.num", TypeInt, whyNoTier},
	{"remote.log.manager.fetch.quota.window.size.seconds", TypeInt, whyNoTier},
	{"remote.log.manager.task.retry.jitter", TypeDouble, whyNoTier},
	{"remote.log.metadata.custom.metadata.max.bytes", TypeInt, whyNoTier},
}

var ignoredIndex = func() map[string]*ignoredKey {
	m := make(map[string]*ignoredKey, len(ignoredKeys))
	for i := range ignoredKeys {
		k := &ignoredKeys[i]
		if _, dup := m[k.name]; dup {
			panic("config: ignored key listed twice: " + k.name)
		}
		// A key kbroker implements is not ignored: whoever implements a
		// key listed here wins without editing this list.
		if _, implemented := keyIndex[k.name]; implemented {
			continue
		}
		m[k.name] = k
	}
	return m
}()

// ignoredSettings returns the ignored keys among the given ones, sorted.
func ignoredSettings(given map[string]setting) []IgnoredSetting {
	var out []IgnoredSetting
	for name, s := range given {
		if _, ok := ignoredIndex[name]; ok {
			out = append(out, IgnoredSetting{Name: name, Value: s.value, Source: s.source})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// IgnoredKeyNames returns the names of the Kafka broker keys kbroker
// accepts and ignores, sorted.
func IgnoredKeyNames() []string {
	out := make([]string, 0, len(ignoredIndex))
	for name := range ignoredIndex {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// IgnoredWarning is the one startup warning for the ignored keys that were
// set: "" when none was.
func (c *Config) IgnoredWarning() string {
	if len(c.Ignored) == 0 {
		return ""
	}
	names := make([]string, len(c.Ignored))
	for i, s := range c.Ignored {
		names[i] = s.Name
	}
	return "Kafka broker keys with no meaning in kbroker were accepted and are ignored: " + strings.Join(names, ", ")
}
