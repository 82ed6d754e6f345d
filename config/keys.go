package config

import (
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// brokerKey defines one broker key: the only place that knows its name,
// default, description, parser, printer and range.
type brokerKey struct {
	name string
	// def is the default in string form, parsed like any other value. When
	// derived is set the key has no literal default: it is parsed only when
	// given, and derive (below) fills the field otherwise; def is then only
	// shown in Keys.
	def     string
	derived bool
	typ     int8 // Kafka's ConfigType; 0 is shown as STRING
	doc     string
	parse   func(b *builder, v string) error // v is the raw value; returns a message error
	format  func(c *Config) string
	check   func(c *Config) error // range checks, run by Validate; may be nil
	// sensitive values (passwords, private keys, JAAS) are never shown:
	// DescribeConfigs returns them as null with IsSensitive.
	sensitive bool
}

// builder is a Config being loaded, plus the values of alias keys that
// fold into one Config field once all keys are known.
type builder struct {
	Config
	given            map[string]bool
	retentionMinutes int64
	retentionHours   int64
	rollHours        int64
	rollJitterHours  int64
	logDir           string
}

// Helpers that build a brokerKey for a field of a common type.

func intKey[T integer](name, def, doc string, min T, f func(*Config) *T) brokerKey {
	return brokerKey{
		name: name, def: def, doc: doc, typ: intType[T](),
		parse: func(b *builder, v string) error {
			n, err := parseInt[T](v)
			if err != nil {
				return err
			}
			*f(&b.Config) = n
			return nil
		},
		format: func(c *Config) string { return strconv.FormatInt(int64(*f(c)), 10) },
		check: func(c *Config) error {
			if n := *f(c); n < min {
				return invalid(name, "%d is less than the minimum %d", n, min)
			}
			return nil
		},
	}
}

func boolKey(name, def, doc string, f func(*Config) *bool) brokerKey {
	return brokerKey{
		name: name, def: def, doc: doc, typ: TypeBoolean,
		parse: func(b *builder, v string) error {
			x, err := parseBool(v)
			*f(&b.Config) = x
			return err
		},
		format: func(c *Config) string { return strconv.FormatBool(*f(c)) },
	}
}

func stringKey(name, def, doc string, f func(*Config) *string) brokerKey {
	return brokerKey{
		name: name, def: def, doc: doc,
		parse:  func(b *builder, v string) error { *f(&b.Config) = strings.TrimSpace(v); return nil },
		format: func(c *Config) string { return *f(c) },
	}
}

func enumKey(name, def, doc string, allowed []string, f func(*Config) *string) brokerKey {
	return brokerKey{
		name: name, def: def, doc: doc + " One of " + strings.Join(allowed, ", ") + ".",
		parse: func(b *builder, v string) error {
			x, err := oneOf(v, allowed...)
			*f(&b.Config) = x
			return err
		},
		format: func(c *Config) string { return *f(c) },
		check: func(c *Config) error {
			if _, err := oneOf(*f(c), allowed...); err != nil {
				return invalid(name, "%s", err)
			}
			return nil
		},
	}
}

func hostPortKey(name, doc string, f func(*Config) *string) brokerKey {
	return brokerKey{
		name: name, doc: doc,
		parse: func(b *builder, v string) error {
			x, err := parseHostPort(v)
			*f(&b.Config) = x
			return err
		},
		format: func(c *Config) string { return *f(c) },
		check: func(c *Config) error {
			if _, err := parseHostPort(*f(c)); err != nil {
				return invalid(name, "%s", err)
			}
			return nil
		},
	}
}

func listKey(name, def, doc string, f func(*Config) *[]string) brokerKey {
	return brokerKey{
		name: name, def: def, doc: doc, typ: TypeList,
		parse:  func(b *builder, v string) error { *f(&b.Config) = parseList(v); return nil },
		format: func(c *Config) string { return strings.Join(*f(c), ",") },
	}
}

// assignorsKey is group.consumer.assignors: a list of the server-side
// assignors this broker implements (Kafka takes class names; its two
// built-in ones are also known by these names).
func assignorsKey() brokerKey {
	k := listKey("group.consumer.assignors", "uniform,range", "Server-side assignors of consumer groups (KIP-848): uniform, range; the first is the default.",
		func(c *Config) *[]string { return &c.GroupConsumerAssignors })
	k.check = func(c *Config) error {
		if len(c.GroupConsumerAssignors) == 0 {
			return invalid("group.consumer.assignors", "at least one assignor is needed")
		}
		for _, a := range c.GroupConsumerAssignors {
			if a != "uniform" && a != "range" {
				return invalid("group.consumer.assignors", "unknown assignor %q (uniform, range)", a)
			}
		}
		return nil
	}
	return k
}

func aliasInt(name, def, doc string, f func(*builder) *int64, format func(*Config) string) brokerKey {
	return brokerKey{
		name: name, def: def, doc: doc, typ: TypeInt,
		parse: func(b *builder, v string) error {
			n, err := parseInt[int64](v)
			*f(b) = n
			return err
		},
		format: format,
	}
}

const (
	msPerMinute = 60 * 1000
	msPerHour   = 60 * msPerMinute
	// minSegmentBytes is higher than Kafka's 14: smaller segments are a
	// mistake, not a setting.
	minSegmentBytes = 1024
)

// keys is the table of broker keys, in no particular order (Keys sorts):
// the core keys below, the log and cleaner keys of log_keys.go and the
// security keys of security.go.
var keys = slices.Concat(coreKeys, logKeys, securityKeys, replicationQuotaKeys, delegationTokenKeys, remoteKeys)

var coreKeys = []brokerKey{
	intKey("node.id", "1", "This node's id, unique in the cluster.", 0,
		func(c *Config) *int32 { return &c.NodeID }),
	{
		name: "process.roles", typ: TypeList, def: "broker,controller",
		doc: "The roles this node plays: broker, controller, or both.",
		parse: func(b *builder, v string) error {
			b.ProcessRoles = parseList(v)
			return checkRoles(b.ProcessRoles)
		},
		format: func(c *Config) string { return strings.Join(c.ProcessRoles, ",") },
		check: func(c *Config) error {
			if err := checkRoles(c.ProcessRoles); err != nil {
				return invalid("process.roles", "%s", err)
			}
			return nil
		},
	},
	{
		name: "listeners", typ: TypeList, def: "PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093",
		doc: "Comma-separated NAME://host:port to listen on; an empty host means every interface.",
		parse: func(b *builder, v string) (err error) {
			b.Listeners, err = parseListeners(v)
			return err
		},
		format: func(c *Config) string { return formatListeners(c.Listeners) },
	},
	{
		name: "advertised.listeners", derived: true, typ: TypeList,
		doc: "Listeners given to clients and other brokers. Default: listeners except controller listeners, with empty or wildcard hosts replaced by localhost.",
		parse: func(b *builder, v string) (err error) {
			b.AdvertisedListeners, err = parseListeners(v)
			return err
		},
		format: func(c *Config) string { return formatListeners(c.AdvertisedListeners) },
	},
	{
		name: "listener.security.protocol.map", def: "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
		doc: "Comma-separated NAME:PROTOCOL for each listener name; PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL, for every listener including the controller listener (see Security).",
		parse: func(b *builder, v string) (err error) {
			b.ListenerSecurityProtocolMap, err = parseProtocolMap(v)
			return err
		},
		format: func(c *Config) string { return formatProtocolMap(c.ListenerSecurityProtocolMap) },
	},
	{
		name: "controller.listener.names", typ: TypeList, def: "CONTROLLER",
		doc: "Listener names used by the controller quorum; the first is the one other nodes connect to.",
		parse: func(b *builder, v string) error {
			b.ControllerListenerNames = parseList(strings.ToUpper(v))
			return nil
		},
		format: func(c *Config) string { return strings.Join(c.ControllerListenerNames, ",") },
	},
	{
		name: "inter.broker.listener.name", derived: true,
		doc: "Listener name brokers use to reach each other. Default: the first listener that is not a controller listener.",
		parse: func(b *builder, v string) error {
			b.InterBrokerListenerName = strings.ToUpper(strings.TrimSpace(v))
			return nil
		},
		format: func(c *Config) string { return c.InterBrokerListenerName },
	},
	{
		name: "controller.quorum.voters", typ: TypeList, def: "1@localhost:9093",
		doc: "The controller quorum: comma-separated id@host:port.",
		parse: func(b *builder, v string) (err error) {
			b.ControllerQuorumVoters, err = parseVoters(v)
			return err
		},
		format: func(c *Config) string { return formatVoters(c.ControllerQuorumVoters) },
	},
	{
		name: "log.dirs", typ: TypeList, derived: true, def: "./data",
		doc: "Comma-separated directories holding partition logs. Wins over log.dir.",
		parse: func(b *builder, v string) error {
			b.LogDirs = parseList(v)
			return nil
		},
		format: func(c *Config) string { return strings.Join(c.LogDirs, ",") },
	},
	{
		name: "log.dir", derived: true, def: "./data",
		doc: "A single log directory, used when log.dirs is not set.",
		parse: func(b *builder, v string) error {
			b.logDir = strings.TrimSpace(v)
			return nil
		},
		format: func(c *Config) string {
			if len(c.LogDirs) == 0 {
				return ""
			}
			return c.LogDirs[0]
		},
	},
	{
		name: "metadata.log.dir", derived: true,
		doc: "Directory of the metadata (Raft) log. Default: __cluster_metadata in the first log directory.",
		parse: func(b *builder, v string) error {
			b.MetadataLogDir = strings.TrimSpace(v)
			return nil
		},
		format: func(c *Config) string { return c.MetadataLogDir },
	},
	intKey("num.partitions", "1", "Partitions of an auto-created topic.", 1,
		func(c *Config) *int32 { return &c.NumPartitions }),
	intKey("default.replication.factor", "1", "Replication factor of an auto-created topic.", 1,
		func(c *Config) *int16 { return &c.DefaultReplicationFactor }),
	boolKey("auto.create.topics.enable", "true", "Create a topic when a client asks for metadata of an unknown one.",
		func(c *Config) *bool { return &c.AutoCreateTopicsEnable }),
	intKey("message.max.bytes", "1048588", "Largest record batch accepted, after compression (topic: max.message.bytes); at most socket.request.max.bytes.", 1,
		func(c *Config) *int32 { return &c.MessageMaxBytes }),
	intKey("socket.request.max.bytes", "104857600", "Largest request accepted; larger frames close the connection.", 1,
		func(c *Config) *int32 { return &c.SocketRequestMaxBytes }),
	intKey("max.request.partition.size.limit", "2000", "Most partitions one DescribeTopicPartitions response describes; the client pages through the rest with the cursor.", 1,
		func(c *Config) *int32 { return &c.MaxRequestPartitionSizeLimit }),
	{
		name: "log.cleanup.policy", typ: TypeList, def: "delete",
		doc: "delete, compact, or compact,delete (topic: cleanup.policy).",
		parse: func(b *builder, v string) (err error) {
			b.LogCleanupPolicy, err = parseCleanupPolicy(v)
			return err
		},
		format: func(c *Config) string { return c.LogCleanupPolicy },
		check: func(c *Config) error {
			if _, err := parseCleanupPolicy(c.LogCleanupPolicy); err != nil {
				return invalid("log.cleanup.policy", "%s", err)
			}
			return nil
		},
	},
	intKey("log.segment.bytes", "1073741824", "Size at which a segment is rolled (topic: segment.bytes).", minSegmentBytes,
		func(c *Config) *int64 { return &c.LogSegmentBytes }),
	func() brokerKey {
		k := intKey("log.roll.ms", "", "Age at which a segment is rolled (topic: segment.ms). Default: log.roll.hours.", 1,
			func(c *Config) *int64 { return &c.LogRollMs })
		k.derived = true
		return k
	}(),
	aliasInt("log.roll.hours", "168", "Age in hours at which a segment is rolled, when log.roll.ms is not set.",
		func(b *builder) *int64 { return &b.rollHours },
		func(c *Config) string { return strconv.FormatInt(c.LogRollMs/msPerHour, 10) }),
	func() brokerKey {
		k := intKey("log.retention.ms", "", "Age after which segments are deleted; -1 keeps them forever (topic: retention.ms). Wins over minutes and hours.", -1,
			func(c *Config) *int64 { return &c.LogRetentionMs })
		k.derived = true
		return k
	}(),
	func() brokerKey {
		k := aliasInt("log.retention.minutes", "", "Retention in minutes, when log.retention.ms is not set.",
			func(b *builder) *int64 { return &b.retentionMinutes },
			func(c *Config) string { return retentionIn(c.LogRetentionMs, msPerMinute) })
		k.derived = true
		return k
	}(),
	aliasInt("log.retention.hours", "168", "Retention in hours, when neither log.retention.ms nor log.retention.minutes is set.",
		func(b *builder) *int64 { return &b.retentionHours },
		func(c *Config) string { return retentionIn(c.LogRetentionMs, msPerHour) }),
	intKey("log.retention.bytes", "-1", "Size of a partition above which old segments are deleted; -1 is no limit (topic: retention.bytes).", -1,
		func(c *Config) *int64 { return &c.LogRetentionBytes }),
	intKey("log.retention.check.interval.ms", "300000", "Milliseconds between checks for segments to delete under retention.", 1,
		func(c *Config) *int64 { return &c.LogRetentionCheckIntervalMs }),
	intKey("log.index.interval.bytes", "4096", "Bytes of log between offset index entries (topic: index.interval.bytes).", 0,
		func(c *Config) *int32 { return &c.LogIndexIntervalBytes }),
	intKey("log.index.size.max.bytes", "10485760", "Largest offset index file (topic: segment.index.bytes).", 4,
		func(c *Config) *int32 { return &c.LogIndexSizeMaxBytes }),
	intKey("log.flush.interval.messages", strconv.FormatInt(math.MaxInt64, 10), "Messages appended before an fsync (topic: flush.messages).", 1,
		func(c *Config) *int64 { return &c.LogFlushIntervalMessages }),
	intKey("log.flush.interval.ms", "-1", "Milliseconds between fsyncs; -1 is never (topic: flush.ms).", -1,
		func(c *Config) *int64 { return &c.LogFlushIntervalMs }),
	intKey("min.insync.replicas", "1", "Replicas that must have a batch before acks=all succeeds.", 1,
		func(c *Config) *int32 { return &c.MinInsyncReplicas }),
	enumKey("compression.type", "producer", "Codec batches are stored with; producer keeps the producer's.", compressionTypes,
		func(c *Config) *string { return &c.CompressionType }),
	enumKey("log.message.timestamp.type", "CreateTime", "Timestamp stored in batches (topic: message.timestamp.type).", timestampTypes,
		func(c *Config) *string { return &c.LogMessageTimestampType }),
	intKey("log.message.timestamp.before.max.ms", strconv.FormatInt(math.MaxInt64, 10), "How far in the past a CreateTime timestamp may be (topic: message.timestamp.before.max.ms).", 0,
		func(c *Config) *int64 { return &c.LogMessageTimestampBeforeMaxMs }),
	intKey("log.message.timestamp.after.max.ms", "3600000", "How far in the future a CreateTime timestamp may be (topic: message.timestamp.after.max.ms).", 0,
		func(c *Config) *int64 { return &c.LogMessageTimestampAfterMaxMs }),
	boolKey("unclean.leader.election.enable", "false", "Elect a leader from outside the ISR when no ISR member is alive (may lose data).",
		func(c *Config) *bool { return &c.UncleanLeaderElectionEnable }),
	intKey("replica.lag.time.max.ms", "30000", "A follower not caught up for this long leaves the ISR.", 1,
		func(c *Config) *int64 { return &c.ReplicaLagTimeMaxMs }),
	intKey("replica.fetch.max.bytes", "1048576", "Bytes a follower asks for per partition in one fetch (at least one batch is always returned).", 1,
		func(c *Config) *int32 { return &c.ReplicaFetchMaxBytes }),
	intKey("replica.fetch.wait.max.ms", "500", "Longest a follower's fetch waits at the leader for new data.", 0,
		func(c *Config) *int32 { return &c.ReplicaFetchWaitMaxMs }),
	intKey("broker.heartbeat.interval.ms", "2000", "How often a broker heartbeats to the active controller.", 1,
		func(c *Config) *int32 { return &c.BrokerHeartbeatIntervalMs }),
	intKey("broker.session.timeout.ms", "9000", "A broker whose heartbeats stop for this long is fenced (memberlist usually detects it sooner).", 1,
		func(c *Config) *int32 { return &c.BrokerSessionTimeoutMs }),
	boolKey("auto.leader.rebalance.enable", "true", "Move leadership back to each partition's preferred (first) replica when it is alive and in the ISR.",
		func(c *Config) *bool { return &c.AutoLeaderRebalanceEnable }),
	intKey("leader.imbalance.check.interval.seconds", "300", "Seconds between preferred-leader checks.", 1,
		func(c *Config) *int64 { return &c.LeaderImbalanceCheckIntervalSeconds }),
	boolKey("controlled.shutdown.enable", "true", "On SIGTERM, ask the controller to move this broker's leaderships away before stopping.",
		func(c *Config) *bool { return &c.ControlledShutdownEnable }),
	intKey("offsets.retention.minutes", "10080", "Committed offsets of a group with no members expire after this many minutes.", 1,
		func(c *Config) *int64 { return &c.OffsetsRetentionMinutes }),
	intKey("offsets.topic.replication.factor", "3", "Replication factor of __consumer_offsets (capped at the live broker count when created).", 1,
		func(c *Config) *int16 { return &c.OffsetsTopicReplicationFactor }),
	intKey("offsets.topic.num.partitions", "50", "Partitions of __consumer_offsets.", 1,
		func(c *Config) *int32 { return &c.OffsetsTopicNumPartitions }),
	intKey("group.initial.rebalance.delay.ms", "3000", "Wait for more members before the first rebalance of an empty group.", 0,
		func(c *Config) *int32 { return &c.GroupInitialRebalanceDelayMs }),
	intKey("group.consumer.session.timeout.ms", "45000", "A consumer group (KIP-848) member whose heartbeats stop for this long is removed.", 1,
		func(c *Config) *int32 { return &c.GroupConsumerSessionTimeoutMs }),
	intKey("group.consumer.heartbeat.interval.ms", "5000", "How often consumer group (KIP-848) members are told to heartbeat.", 1,
		func(c *Config) *int32 { return &c.GroupConsumerHeartbeatIntervalMs }),
	assignorsKey(),
	enumKey("group.consumer.migration.policy", "bidirectional", "Online (non-empty) conversions between classic and consumer groups Kafka allows; kbroker converts only empty groups (always, as Kafka), so this is only validated.",
		[]string{"disabled", "upgrade", "downgrade", "bidirectional"},
		func(c *Config) *string { return &c.GroupConsumerMigrationPolicy }),
	intKey("group.share.session.timeout.ms", "45000", "A share group (KIP-932) member whose heartbeats stop for this long is removed and its acquired records released.", 1,
		func(c *Config) *int32 { return &c.GroupShareSessionTimeoutMs }),
	intKey("group.share.heartbeat.interval.ms", "5000", "How often share group members are told to heartbeat.", 1,
		func(c *Config) *int32 { return &c.GroupShareHeartbeatIntervalMs }),
	intKey("group.share.max.size", "200", "The most members a share group admits (GROUP_MAX_SIZE_REACHED beyond).", 1,
		func(c *Config) *int32 { return &c.GroupShareMaxSize }),
	intKey("group.share.record.lock.duration.ms", "30000", "How long a record acquired by a share consumer stays locked to it before it is delivered again; a group's share.record.lock.duration.ms overrides it.", 1000,
		func(c *Config) *int32 { return &c.GroupShareRecordLockDurationMs }),
	intKey("group.share.min.record.lock.duration.ms", "15000", "The least share.record.lock.duration.ms a share group may set.", 1000,
		func(c *Config) *int32 { return &c.GroupShareMinRecordLockDurationMs }),
	intKey("group.share.max.record.lock.duration.ms", "60000", "The most share.record.lock.duration.ms a share group may set.", 30000,
		func(c *Config) *int32 { return &c.GroupShareMaxRecordLockDurationMs }),
	intKey("group.share.delivery.count.limit", "5", "How often a record is delivered to a share group before it is archived (2 to 10).", 2,
		func(c *Config) *int32 { return &c.GroupShareDeliveryCountLimit }),
	intKey("group.share.partition.max.record.locks", "2000", "The most in-flight records of one share-partition (100 to 10000).", 100,
		func(c *Config) *int32 { return &c.GroupSharePartitionMaxRecordLocks }),
	intKey("share.coordinator.state.topic.num.partitions", "50", "Partitions of __share_group_state (fixed once it exists).", 1,
		func(c *Config) *int32 { return &c.ShareCoordinatorStateTopicNumParts }),
	intKey("share.coordinator.state.topic.replication.factor", "3", "Replication factor of __share_group_state (capped at the live brokers when it is created).", 1,
		func(c *Config) *int16 { return &c.ShareCoordinatorStateTopicRF }),
	intKey("share.coordinator.state.topic.min.isr", "2", "min.insync.replicas of __share_group_state (capped at its replication factor).", 1,
		func(c *Config) *int16 { return &c.ShareCoordinatorStateTopicMinISR }),

	// The transaction coordinator (Kafka's defaults).
	intKey("transaction.state.log.num.partitions", "50", "Partitions of __transaction_state.", 1,
		func(c *Config) *int32 { return &c.TransactionStateLogNumPartitions }),
	intKey("transaction.state.log.replication.factor", "3", "Replication factor of __transaction_state (capped at the live broker count when created).", 1,
		func(c *Config) *int16 { return &c.TransactionStateLogReplicationFactor }),
	intKey("transaction.state.log.min.isr", "2", "min.insync.replicas of __transaction_state (capped at its replication factor).", 1,
		func(c *Config) *int32 { return &c.TransactionStateLogMinISR }),
	intKey("transaction.max.timeout.ms", "900000", "Largest transaction timeout a producer may ask for; larger gets INVALID_TRANSACTION_TIMEOUT.", 1,
		func(c *Config) *int32 { return &c.TransactionMaxTimeoutMs }),
	intKey("transactional.id.expiration.ms", "604800000", "A transactional id without a transaction for this long is removed.", 1,
		func(c *Config) *int32 { return &c.TransactionalIDExpirationMs }),
	intKey("transaction.abort.timed.out.transaction.cleanup.interval.ms", "10000", "How often the coordinator aborts transactions that outlived their timeout.", 1,
		func(c *Config) *int32 { return &c.TransactionAbortTimedOutTransactionCleanupIntervalMs }),

	// Capacity limits, checked by the active controller on CreateTopics
	// and CreatePartitions (Kafka's proposed KIP-578 names; Kafka itself
	// has no such limits). Every partition is in every node's metadata
	// image and snapshot; every replica keeps open segment files on its
	// broker (three descriptors per segment).
	intKey("max.partitions", "100000", "Most partitions the cluster may have; CreateTopics/CreatePartitions beyond it fail with POLICY_VIOLATION.", 1,
		func(c *Config) *int32 { return &c.MaxPartitions }),
	intKey("max.broker.partitions", "10000", "Most partition replicas one broker may host; CreateTopics/CreatePartitions beyond it fail with POLICY_VIOLATION.", 1,
		func(c *Config) *int32 { return &c.MaxBrokerPartitions }),

	stringKey("broker.rack", "", "Rack of this broker, for replica placement.",
		func(c *Config) *string { return &c.BrokerRack }),
	hostPortKey("gossip.listener", "host:port for cluster membership gossip; empty is off.",
		func(c *Config) *string { return &c.GossipListener }),
	listKey("gossip.seeds", "", "Comma-separated host:port of gossip peers to join.",
		func(c *Config) *[]string { return &c.GossipSeeds }),
	stringKey("gossip.secret.key.file", "", "File of base64 AES keys (16, 24 or 32 bytes), one per line, primary first, that encrypt and authenticate gossip; re-read every 5s for rotation. Empty: gossip is unauthenticated (a warning is logged).",
		func(c *Config) *string { return &c.GossipSecretKeyFile }),
	hostPortKey("admin.listener", "host:port of the admin HTTP server (/metrics); empty is off.",
		func(c *Config) *string { return &c.AdminListener }),
	boolKey("admin.pprof.enable", "false", "Serve Go's /debug/pprof profiles on admin.listener and sample mutex and block contention (off: profiles expose internals and cost a little CPU).",
		func(c *Config) *bool { return &c.AdminPprofEnable }),

	// Client connection and request limits (cluster/server.go); the
	// overrides parser is in connections.go.
	intKey("max.connections", strconv.Itoa(math.MaxInt32), "Client connections accepted across all listeners; further ones are accepted and closed at once.", 0,
		func(c *Config) *int32 { return &c.MaxConnections }),
	intKey("max.connections.per.ip", strconv.Itoa(math.MaxInt32), "Client connections accepted from one IP address; further ones are accepted and closed at once.", 0,
		func(c *Config) *int32 { return &c.MaxConnectionsPerIP }),
	maxConnectionsPerIPOverridesKey,
	intKey("connections.max.idle.ms", "600000", "A client connection with no request in flight and no bytes received for this long is closed; -1 is never.", -1,
		func(c *Config) *int64 { return &c.ConnectionsMaxIdleMs }),
	intKey("queued.max.request.bytes", "104857600", "Bytes of requests read and not yet answered, across all connections; past it connections stop reading until responses are written. -1 is no limit. A request larger than the limit waits until it is the only one.", -1,
		func(c *Config) *int64 { return &c.QueuedMaxRequestBytes }),
	intKey("max.incremental.fetch.session.cache.slots", "1000", "Incremental fetch sessions (KIP-227) this broker keeps for followers and consumers; 0 turns them off, so every fetch is a full one.", 0,
		func(c *Config) *int32 { return &c.MaxIncrementalFetchSessionCacheSlots }),
	intKey("quota.window.num", "11", "Samples a client quota rate is measured over.", 1,
		func(c *Config) *int32 { return &c.QuotaWindowNum }),
	intKey("quota.window.size.seconds", "1", "Length of one client quota sample, in seconds.", 1,
		func(c *Config) *int32 { return &c.QuotaWindowSizeSeconds }),
	intKey("controller.quota.window.num", "11", "Samples of the controller mutation quota: a client may create or delete up to controller_mutation_rate x this x controller.quota.window.size.seconds partitions in one burst.", 1,
		func(c *Config) *int32 { return &c.ControllerQuotaWindowNum }),
	intKey("controller.quota.window.size.seconds", "1", "Length of one controller mutation quota sample, in seconds.", 1,
		func(c *Config) *int32 { return &c.ControllerQuotaWindowSizeSeconds }),

	// Authorization (cluster/acl); the keys are in authorizer.go.
	authorizerClassNameKey,
	boolKey("allow.everyone.if.no.acl.found", "false", "With an authorizer, allow an action on a resource that no ACL matches.",
		func(c *Config) *bool { return &c.AllowEveryoneIfNoACLFound }),
}

var keyIndex = func() map[string]*brokerKey {
	m := make(map[string]*brokerKey, len(keys))
	for i := range keys {
		if _, dup := m[keys[i].name]; dup {
			panic("config: key defined twice: " + keys[i].name)
		}
		m[keys[i].name] = &keys[i]
	}
	return m
}()

func retentionIn(ms, unit int64) string {
	if ms < 0 {
		return "-1"
	}
	return strconv.FormatInt(ms/unit, 10)
}

func checkRoles(roles []string) error {
	if len(roles) == 0 {
		return errString("must name at least one of broker, controller")
	}
	seen := map[string]bool{}
	for _, r := range roles {
		if r != roleBroker && r != roleController {
			return errString(strconv.Quote(r) + " is not broker or controller")
		}
		if seen[r] {
			return errString(r + " appears twice")
		}
		seen[r] = true
	}
	return nil
}

type errString string

func (e errString) Error() string { return string(e) }

// setting is one key's raw value and where it came from.
type setting struct {
	value  string
	source string
}

// build parses merged settings over the defaults, then fills derived keys.
func build(given map[string]setting) (Config, error) {
	b := builder{given: map[string]bool{}}
	b.Config.given = map[string]string{}
	for i := range keys {
		k := &keys[i]
		s, ok := given[k.name]
		if !ok {
			if k.derived {
				continue
			}
			s = setting{value: k.def, source: "default"}
		} else {
			b.given[k.name] = true
			b.Config.given[k.name] = s.value
		}
		if err := k.parse(&b, s.value); err != nil {
			return Config{}, &Error{Key: k.name, Source: s.source, Msg: err.Error(), Err: ErrInvalid}
		}
	}
	// Listener-prefixed security keys (put lets only those through).
	for name, s := range given {
		if _, ok := keyIndex[name]; !ok && isListenerSecurityKey(name) {
			b.setSecurity(name, s.value)
		}
	}
	if s, ok := given["broker.id"]; ok && strings.TrimSpace(s.value) != strconv.FormatInt(int64(b.NodeID), 10) {
		return Config{}, &Error{Key: "broker.id", Source: s.source, Err: ErrInvalid,
			Msg: strconv.Quote(s.value) + " differs from node.id " + strconv.FormatInt(int64(b.NodeID), 10) + " (as in Kafka, broker.id must equal node.id; node.id is enough)"}
	}
	if s, ok := given["controller.quorum.bootstrap.servers"]; ok && !b.given["controller.quorum.voters"] {
		return Config{}, &Error{Key: "controller.quorum.bootstrap.servers", Source: s.source, Err: ErrInvalid,
			Msg: "kbroker's controller quorum is static: set controller.quorum.voters (id@host:port of every controller, as in Kafka's static quorum); " +
				"a dynamic quorum found through bootstrap servers (KIP-853) is not supported"}
	}
	b.Ignored = ignoredSettings(given)
	b.derive()
	return b.Config, nil
}

// derive fills the keys whose defaults depend on other keys, with Kafka's
// precedence among alias keys.
func (b *builder) derive() {
	if !b.given["log.retention.ms"] {
		switch {
		case b.given["log.retention.minutes"]:
			b.LogRetentionMs = scale(b.retentionMinutes, msPerMinute)
		default:
			b.LogRetentionMs = scale(b.retentionHours, msPerHour)
		}
	}
	if b.LogRetentionMs < 0 {
		b.LogRetentionMs = -1 // Kafka: any negative retention means forever
	}
	if !b.given["log.roll.ms"] {
		b.LogRollMs = scale(b.rollHours, msPerHour)
	}
	if !b.given["log.roll.jitter.ms"] {
		b.LogRollJitterMs = scale(b.rollJitterHours, msPerHour)
	}
	if !b.given["log.dirs"] {
		if b.given["log.dir"] && b.logDir != "" {
			b.LogDirs = []string{b.logDir}
		} else {
			b.LogDirs = []string{keyIndex["log.dirs"].def}
		}
	}
	if !b.given["metadata.log.dir"] && len(b.LogDirs) > 0 {
		b.MetadataLogDir = filepath.Join(b.LogDirs[0], "__cluster_metadata")
	}
	if !b.given["advertised.listeners"] {
		b.AdvertisedListeners = nil
		for _, l := range b.Listeners {
			if b.isControllerListener(l.Name) {
				continue
			}
			switch l.Host {
			case "", "0.0.0.0", "::":
				l.Host = "localhost"
			}
			b.AdvertisedListeners = append(b.AdvertisedListeners, l)
		}
	}
	if !b.given["inter.broker.listener.name"] {
		b.InterBrokerListenerName = ""
		for _, l := range b.Listeners {
			if !b.isControllerListener(l.Name) {
				b.InterBrokerListenerName = l.Name
				break
			}
		}
	}
}

// scale multiplies, keeping negatives as -1 and saturating on overflow.
func scale(n, unit int64) int64 {
	if n < 0 {
		return -1
	}
	if n > math.MaxInt64/unit {
		return math.MaxInt64
	}
	return n * unit
}

// KeyDoc describes one supported key, for documentation and --help.
type KeyDoc struct {
	Name    string
	Default string // string form; "" for no default or one derived from other keys (Doc says)
	Scope   string // "broker" or "topic"
	Doc     string
}

// Keys returns every supported key, broker and topic, sorted by name then
// scope.
func Keys() []KeyDoc {
	out := make([]KeyDoc, 0, len(keys)+len(topicKeys))
	for _, k := range keys {
		out = append(out, KeyDoc{Name: k.name, Default: k.def, Scope: "broker", Doc: k.doc})
	}
	d := Default()
	td := d.TopicDefaults()
	for _, k := range topicKeys {
		doc := k.doc + " Default: broker " + k.brokerKey + "."
		if k.brokerKey == "" {
			doc = k.doc + " No broker default."
		}
		out = append(out, KeyDoc{Name: k.name, Default: k.format(&td), Scope: "topic", Doc: doc})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Scope < out[j].Scope
	})
	return out
}
