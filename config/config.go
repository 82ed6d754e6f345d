package config

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Errors returned by Load, Validate and ValidateTopicConfigs wrap one of
// these, so that callers can map them (for example to INVALID_CONFIG).
var (
	// ErrUnknownKey: a key that is not a supported config.
	ErrUnknownKey = errors.New("unknown key")
	// ErrInvalid: a value that does not parse or is out of range, or a
	// combination of values that cannot work together.
	ErrInvalid = errors.New("invalid value")
)

// Error describes one bad key or value. It wraps ErrUnknownKey or
// ErrInvalid.
type Error struct {
	Key    string // the config key
	Source string // "file:line", "env NAME", "--set", or "" (Validate)
	Msg    string // what is wrong, e.g. `"abc" is not an integer`
	Err    error  // ErrUnknownKey or ErrInvalid
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("config: ")
	if errors.Is(e.Err, ErrUnknownKey) {
		fmt.Fprintf(&b, "unknown key %q", e.Key)
	} else {
		b.WriteString(e.Key)
		b.WriteString(": ")
		b.WriteString(e.Msg)
	}
	if e.Source != "" {
		b.WriteString(" (")
		b.WriteString(e.Source)
		b.WriteString(")")
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

func invalid(key, format string, args ...any) error {
	return &Error{Key: key, Msg: fmt.Sprintf(format, args...), Err: ErrInvalid}
}

// Listener is one entry of listeners or advertised.listeners, written
// NAME://host:port. An empty Host means every interface.
type Listener struct {
	Name string // upper case: PLAINTEXT, CONTROLLER, INTERNAL, ...
	Host string
	Port int
}

// String returns the listener as Kafka writes it: NAME://host:port.
func (l Listener) String() string {
	return l.Name + "://" + l.Addr()
}

// Addr returns host:port, with IPv6 hosts bracketed.
func (l Listener) Addr() string {
	return net.JoinHostPort(l.Host, strconv.Itoa(l.Port))
}

// Voter is one entry of controller.quorum.voters, written id@host:port.
type Voter struct {
	ID   int32
	Host string
	Port int
}

// String returns the voter as Kafka writes it: id@host:port.
func (v Voter) String() string {
	return strconv.FormatInt(int64(v.ID), 10) + "@" + v.Addr()
}

// Addr returns host:port, with IPv6 hosts bracketed.
func (v Voter) Addr() string {
	return net.JoinHostPort(v.Host, strconv.Itoa(v.Port))
}

// Config is one node's configuration. The kafka tag of each field is the
// key that sets it; keys.go defines each key's default, parser and checks.
type Config struct {
	NodeID                      int32             `kafka:"node.id"`
	ProcessRoles                []string          `kafka:"process.roles"`
	Listeners                   []Listener        `kafka:"listeners"`
	AdvertisedListeners         []Listener        `kafka:"advertised.listeners"`
	ListenerSecurityProtocolMap map[string]string `kafka:"listener.security.protocol.map"`
	ControllerListenerNames     []string          `kafka:"controller.listener.names"`
	InterBrokerListenerName     string            `kafka:"inter.broker.listener.name"`
	ControllerQuorumVoters      []Voter           `kafka:"controller.quorum.voters"`

	LogDirs        []string `kafka:"log.dirs"`
	MetadataLogDir string   `kafka:"metadata.log.dir"`

	NumPartitions            int32 `kafka:"num.partitions"`
	DefaultReplicationFactor int16 `kafka:"default.replication.factor"`
	AutoCreateTopicsEnable   bool  `kafka:"auto.create.topics.enable"`
	MessageMaxBytes          int32 `kafka:"message.max.bytes"`
	SocketRequestMaxBytes    int32 `kafka:"socket.request.max.bytes"`
	// MaxRequestPartitionSizeLimit caps the partitions one
	// DescribeTopicPartitions response describes.
	MaxRequestPartitionSizeLimit int32 `kafka:"max.request.partition.size.limit"`

	LogCleanupPolicy               string `kafka:"log.cleanup.policy"`
	LogSegmentBytes                int64  `kafka:"log.segment.bytes"`
	LogRollMs                      int64  `kafka:"log.roll.ms"`
	LogRetentionMs                 int64  `kafka:"log.retention.ms"`
	LogRetentionBytes              int64  `kafka:"log.retention.bytes"`
	LogRetentionCheckIntervalMs    int64  `kafka:"log.retention.check.interval.ms"`
	LogIndexIntervalBytes          int32  `kafka:"log.index.interval.bytes"`
	LogIndexSizeMaxBytes           int32  `kafka:"log.index.size.max.bytes"`
	LogFlushIntervalMessages       int64  `kafka:"log.flush.interval.messages"`
	LogFlushIntervalMs             int64  `kafka:"log.flush.interval.ms"`
	MinInsyncReplicas              int32  `kafka:"min.insync.replicas"`
	CompressionType                string `kafka:"compression.type"`
	LogMessageTimestampType        string `kafka:"log.message.timestamp.type"`
	LogMessageTimestampBeforeMaxMs int64  `kafka:"log.message.timestamp.before.max.ms"`
	LogMessageTimestampAfterMaxMs  int64  `kafka:"log.message.timestamp.after.max.ms"`
	UncleanLeaderElectionEnable    bool   `kafka:"unclean.leader.election.enable"`
	ReplicaLagTimeMaxMs            int64  `kafka:"replica.lag.time.max.ms"`
	ReplicaFetchMaxBytes           int32  `kafka:"replica.fetch.max.bytes"`
	ReplicaFetchWaitMaxMs          int32  `kafka:"replica.fetch.wait.max.ms"`

	BrokerHeartbeatIntervalMs           int32 `kafka:"broker.heartbeat.interval.ms"`
	BrokerSessionTimeoutMs              int32 `kafka:"broker.session.timeout.ms"`
	AutoLeaderRebalanceEnable           bool  `kafka:"auto.leader.rebalance.enable"`
	LeaderImbalanceCheckIntervalSeconds int64 `kafka:"leader.imbalance.check.interval.seconds"`
	ControlledShutdownEnable            bool  `kafka:"controlled.shutdown.enable"`

	OffsetsTopicReplicationFactor int16 `kafka:"offsets.topic.replication.factor"`
	OffsetsRetentionMinutes       int64 `kafka:"offsets.retention.minutes"`
	OffsetsTopicNumPartitions     int32 `kafka:"offsets.topic.num.partitions"`
	GroupInitialRebalanceDelayMs  int32 `kafka:"group.initial.rebalance.delay.ms"`
	// KIP-848 consumer groups.
	GroupConsumerSessionTimeoutMs    int32    `kafka:"group.consumer.session.timeout.ms"`
	GroupConsumerHeartbeatIntervalMs int32    `kafka:"group.consumer.heartbeat.interval.ms"`
	GroupConsumerAssignors           []string `kafka:"group.consumer.assignors"`
	GroupConsumerMigrationPolicy     string   `kafka:"group.consumer.migration.policy"`
	// Share groups (KIP-932) and __share_group_state (share.go).
	GroupShareSessionTimeoutMs         int32 `kafka:"group.share.session.timeout.ms"`
	GroupShareHeartbeatIntervalMs      int32 `kafka:"group.share.heartbeat.interval.ms"`
	GroupShareMaxSize                  int32 `kafka:"group.share.max.size"`
	GroupShareRecordLockDurationMs     int32 `kafka:"group.share.record.lock.duration.ms"`
	GroupShareMinRecordLockDurationMs  int32 `kafka:"group.share.min.record.lock.duration.ms"`
	GroupShareMaxRecordLockDurationMs  int32 `kafka:"group.share.max.record.lock.duration.ms"`
	GroupShareDeliveryCountLimit       int32 `kafka:"group.share.delivery.count.limit"`
	GroupSharePartitionMaxRecordLocks  int32 `kafka:"group.share.partition.max.record.locks"`
	ShareCoordinatorStateTopicNumParts int32 `kafka:"share.coordinator.state.topic.num.partitions"`
	ShareCoordinatorStateTopicRF       int16 `kafka:"share.coordinator.state.topic.replication.factor"`
	ShareCoordinatorStateTopicMinISR   int16 `kafka:"share.coordinator.state.topic.min.isr"`

	// The transaction coordinator and __transaction_state.
	TransactionStateLogNumPartitions                     int32 `kafka:"transaction.state.log.num.partitions"`
	TransactionStateLogReplicationFactor                 int16 `kafka:"transaction.state.log.replication.factor"`
	TransactionStateLogMinISR                            int32 `kafka:"transaction.state.log.min.isr"`
	TransactionMaxTimeoutMs                              int32 `kafka:"transaction.max.timeout.ms"`
	TransactionalIDExpirationMs                          int32 `kafka:"transactional.id.expiration.ms"`
	TransactionAbortTimedOutTransactionCleanupIntervalMs int32 `kafka:"transaction.abort.timed.out.transaction.cleanup.interval.ms"`

	// Capacity limits (KIP-578's names; checked by the active controller).
	MaxPartitions       int32 `kafka:"max.partitions"`
	MaxBrokerPartitions int32 `kafka:"max.broker.partitions"`

	BrokerRack     string   `kafka:"broker.rack"`
	GossipListener string   `kafka:"gossip.listener"`
	GossipSeeds    []string `kafka:"gossip.seeds"`
	// GossipSecretKeyFile holds the keys that encrypt and authenticate
	// gossip; see cluster/membership's keyring.go for the format.
	GossipSecretKeyFile string `kafka:"gossip.secret.key.file"`
	AdminListener       string `kafka:"admin.listener"`
	// AdminPprofEnable serves net/http/pprof on the admin listener.
	AdminPprofEnable bool `kafka:"admin.pprof.enable"`

	// Client connection and request limits (keys: connections.go).
	MaxConnections                       int32            `kafka:"max.connections"`
	MaxConnectionsPerIP                  int32            `kafka:"max.connections.per.ip"`
	MaxConnectionsPerIPOverrides         map[string]int32 `kafka:"max.connections.per.ip.overrides"`
	ConnectionsMaxIdleMs                 int64            `kafka:"connections.max.idle.ms"`
	QueuedMaxRequestBytes                int64            `kafka:"queued.max.request.bytes"`
	MaxIncrementalFetchSessionCacheSlots int32            `kafka:"max.incremental.fetch.session.cache.slots"`

	// Client quota windows (cluster/quotas.go).
	QuotaWindowNum         int32 `kafka:"quota.window.num"`
	QuotaWindowSizeSeconds int32 `kafka:"quota.window.size.seconds"`
	// The controller mutation quota's token bucket: its burst is the
	// quota times these (cluster/quotas_mutation.go).
	ControllerQuotaWindowNum         int32 `kafka:"controller.quota.window.num"`
	ControllerQuotaWindowSizeSeconds int32 `kafka:"controller.quota.window.size.seconds"`

	// Replication throttles (keys: replication_quota.go).
	LeaderReplicationThrottledRate    int64 `kafka:"leader.replication.throttled.rate"`
	FollowerReplicationThrottledRate  int64 `kafka:"follower.replication.throttled.rate"`
	ReplicationQuotaWindowNum         int32 `kafka:"replication.quota.window.num"`
	ReplicationQuotaWindowSizeSeconds int32 `kafka:"replication.quota.window.size.seconds"`

	// Authorization (keys: authorizer.go). An empty AuthorizerClassName
	// is no authorizer: every request is allowed.
	AuthorizerClassName       string `kafka:"authorizer.class.name"`
	AllowEveryoneIfNoACLFound bool   `kafka:"allow.everyone.if.no.acl.found"`

	// Security (keys: security.go). SuperUsers are principals allowed
	// everything ("User:admin"); ConnectionsMaxReauthMs > 0 bounds a SASL
	// session (KIP-368), 0 is unbounded.
	SuperUsers             []string `kafka:"super.users"`
	ConnectionsMaxReauthMs int64    `kafka:"connections.max.reauth.ms"`
	// Security holds every ssl.* and sasl.* key that was given, verbatim,
	// with its listener.name.<listener>. variants: the flat property view
	// package security reads (SecurityProps). Its keys are in the table
	// one by one, so it has no single tag.
	Security map[string]string `kafka:"-"`

	// Delegation tokens (keys: delegation_tokens.go). An empty
	// DelegationTokenSecretKey disables them.
	DelegationTokenSecretKey             string `kafka:"delegation.token.secret.key"`
	DelegationTokenMaxLifetimeMs         int64  `kafka:"delegation.token.max.lifetime.ms"`
	DelegationTokenExpiryTimeMs          int64  `kafka:"delegation.token.expiry.time.ms"`
	DelegationTokenExpiryCheckIntervalMs int64  `kafka:"delegation.token.expiry.check.interval.ms"`

	// Log and cleaner keys (log_keys.go).
	LogRollJitterMs               int64   `kafka:"log.roll.jitter.ms"`
	LogSegmentDeleteDelayMs       int64   `kafka:"log.segment.delete.delay.ms"`
	LogPreallocate                bool    `kafka:"log.preallocate"`
	LogCleanerMinCleanableRatio   float64 `kafka:"log.cleaner.min.cleanable.ratio"`
	LogCleanerDeleteRetentionMs   int64   `kafka:"log.cleaner.delete.retention.ms"`
	LogCleanerMinCompactionLagMs  int64   `kafka:"log.cleaner.min.compaction.lag.ms"`
	LogCleanerMaxCompactionLagMs  int64   `kafka:"log.cleaner.max.compaction.lag.ms"`
	LogCleanerEnable              bool    `kafka:"log.cleaner.enable"`
	LogCleanerBackoffMs           int64   `kafka:"log.cleaner.backoff.ms"`
	LogCleanerDedupeBufferSize    int64   `kafka:"log.cleaner.dedupe.buffer.size"`
	LogCleanerIOMaxBytesPerSecond float64 `kafka:"log.cleaner.io.max.bytes.per.second"`
	LogCleanerThreads             int32   `kafka:"log.cleaner.threads"`
	LogScrubberBytesPerSecond     int64   `kafka:"log.scrubber.bytes.per.second"`
	CompressionGzipLevel          int32   `kafka:"compression.gzip.level"`
	CompressionLz4Level           int32   `kafka:"compression.lz4.level"`
	CompressionZstdLevel          int32   `kafka:"compression.zstd.level"`
	LogLocalRetentionMs           int64   `kafka:"log.local.retention.ms"`
	LogLocalRetentionBytes        int64   `kafka:"log.local.retention.bytes"`
	RemoteLogStorageSystemEnable  bool    `kafka:"remote.log.storage.system.enable"`
	// Tiered storage (remote_keys.go).
	RemoteLogManagerTaskIntervalMs        int64         `kafka:"remote.log.manager.task.interval.ms"`
	RemoteLogManagerCopierThreadPoolSize  int32         `kafka:"remote.log.manager.copier.thread.pool.size"`
	RemoteLogManagerTaskRetryBackoffMs    int64         `kafka:"remote.log.manager.task.retry.backoff.ms"`
	RemoteLogManagerTaskRetryBackoffMaxMs int64         `kafka:"remote.log.manager.task.retry.backoff.max.ms"`
	RemoteLogReaderThreads                int32         `kafka:"remote.log.reader.threads"`
	RemoteFetchMaxWaitMs                  int32         `kafka:"remote.fetch.max.wait.ms"`
	RemoteStorage                         RemoteStorage `kafka:"-"`
	ControllerQuorumBootstrapServers      []string      `kafka:"controller.quorum.bootstrap.servers"`

	// Ignored are the Kafka broker keys that were set and that kbroker
	// accepts without effect (ignored_keys.go), sorted by name, for the
	// startup warning and DescribeConfigs.
	Ignored []IgnoredSetting `kafka:"-"`

	// given holds the raw value of every key set in a source, for
	// DescribeConfigs' STATIC_BROKER_CONFIG synonyms.
	given map[string]string
}

// Default returns the configuration of a single node that is both broker
// and controller, as Load("", nil, nil) would.
func Default() Config {
	c, err := build(nil)
	if err != nil {
		panic("config: defaults do not parse: " + err.Error())
	}
	return c
}

const (
	roleBroker     = "broker"
	roleController = "controller"
)

func (c *Config) hasRole(r string) bool {
	for _, x := range c.ProcessRoles {
		if x == r {
			return true
		}
	}
	return false
}

// IsBroker reports whether process.roles includes broker.
func (c *Config) IsBroker() bool { return c.hasRole(roleBroker) }

// IsController reports whether process.roles includes controller.
func (c *Config) IsController() bool { return c.hasRole(roleController) }

// Listener returns the listener with this name (case-insensitive).
func (c *Config) Listener(name string) (Listener, bool) {
	for _, l := range c.Listeners {
		if strings.EqualFold(l.Name, name) {
			return l, true
		}
	}
	return Listener{}, false
}

// ControllerListener returns the first listener named in
// controller.listener.names that this node listens on. A broker-only node
// has none: it reaches the controllers through controller.quorum.voters.
func (c *Config) ControllerListener() (Listener, bool) {
	for _, n := range c.ControllerListenerNames {
		if l, ok := c.Listener(n); ok {
			return l, true
		}
	}
	return Listener{}, false
}

// isControllerListener reports whether name is in controller.listener.names.
func (c *Config) isControllerListener(name string) bool {
	for _, n := range c.ControllerListenerNames {
		if strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}
