package config

import (
	"maps"
	"math"
	"slices"
	"strconv"
)

// TopicConfig is one topic's resolved configuration: the broker's defaults
// overridden by the topic's own keys. It holds every topic-level key of
// Kafka 4.x; topic_keys.go says what each one does here.
type TopicConfig struct {
	CleanupPolicy               string  // cleanup.policy: delete, compact or compact,delete
	CompressionType             string  // compression.type
	CompressionGzipLevel        int32   // compression.gzip.level: -1 (zlib default) or 1..9
	CompressionLz4Level         int32   // compression.lz4.level: 1..17
	CompressionZstdLevel        int32   // compression.zstd.level: -131072..22
	MaxMessageBytes             int32   // max.message.bytes
	MinInsyncReplicas           int32   // min.insync.replicas
	RetentionMs                 int64   // retention.ms; -1 forever
	RetentionBytes              int64   // retention.bytes; -1 no limit
	SegmentBytes                int64   // segment.bytes
	SegmentMs                   int64   // segment.ms
	SegmentJitterMs             int64   // segment.jitter.ms
	SegmentIndexBytes           int32   // segment.index.bytes
	IndexIntervalBytes          int32   // index.interval.bytes
	FlushMessages               int64   // flush.messages
	FlushMs                     int64   // flush.ms; MaxInt64 never
	FileDeleteDelayMs           int64   // file.delete.delay.ms
	Preallocate                 bool    // preallocate
	MessageTimestampType        string  // message.timestamp.type
	MessageTimestampBeforeMaxMs int64   // message.timestamp.before.max.ms
	MessageTimestampAfterMaxMs  int64   // message.timestamp.after.max.ms
	MessageDownconversionEnable bool    // message.downconversion.enable (no effect, as in Kafka 4)
	UncleanLeaderElectionEnable bool    // unclean.leader.election.enable
	MinCleanableDirtyRatio      float64 // min.cleanable.dirty.ratio
	DeleteRetentionMs           int64   // delete.retention.ms
	MinCompactionLagMs          int64   // min.compaction.lag.ms
	MaxCompactionLagMs          int64   // max.compaction.lag.ms
	// Replication throttling lists ("*" or partition:broker,...), stored
	// and validated; not enforced yet.
	LeaderReplicationThrottledReplicas   string // leader.replication.throttled.replicas
	FollowerReplicationThrottledReplicas string // follower.replication.throttled.replicas
	// Tiered storage keys (package tiered); remote.log.copy.disable and
	// remote.log.delete.on.disable are accepted without effect.
	RemoteStorageEnable      bool  // remote.storage.enable
	LocalRetentionMs         int64 // local.retention.ms; -2 means retention.ms
	LocalRetentionBytes      int64 // local.retention.bytes; -2 means retention.bytes
	RemoteLogCopyDisable     bool  // remote.log.copy.disable
	RemoteLogDeleteOnDisable bool  // remote.log.delete.on.disable
}

// topicKey defines one topic key and the broker key its default comes from.
type topicKey struct {
	name string
	// brokerKey is the broker key (Kafka's synonym) that supplies the
	// default; "" for the keys Kafka gives no server default.
	brokerKey string
	// aliases are further broker synonyms, lower precedence
	// (log.retention.minutes, log.retention.hours for retention.ms).
	aliases []string
	typ     int8 // Kafka's ConfigType
	doc     string
	parse   func(t *TopicConfig, v string) error // syntax and range
	format  func(t *TopicConfig) string
	inherit func(t *TopicConfig, c *Config) // copy the broker default
	// bound, when set, checks a parsed value against this node's broker
	// config (limits that depend on other keys).
	bound func(t *TopicConfig, c *Config) error
}

func topicInt[T integer](name, brokerKey, doc string, min T, f func(*TopicConfig) *T, from func(*Config) T) topicKey {
	return topicIntRange(name, brokerKey, doc, min, maxOf[T](), f, from)
}

func maxOf[T integer]() T {
	maxInt64 := int64(math.MaxInt64)
	return T(maxInt64 >> (64 - bitsOf[T]()))
}

func topicIntRange[T integer](name, brokerKey, doc string, min, max T, f func(*TopicConfig) *T, from func(*Config) T) topicKey {
	return topicKey{
		name: name, brokerKey: brokerKey, doc: doc, typ: intType[T](),
		parse: func(t *TopicConfig, v string) error {
			n, err := parseInt[T](v)
			if err != nil {
				return err
			}
			if err := checkRange(v, int64(n), int64(min), int64(max)); err != nil {
				return err
			}
			*f(t) = n
			return nil
		},
		format:  func(t *TopicConfig) string { return strconv.FormatInt(int64(*f(t)), 10) },
		inherit: func(t *TopicConfig, c *Config) { *f(t) = from(c) },
	}
}

func checkRange(v string, n, min, max int64) error {
	if n < min {
		return errString(strconv.Quote(v) + " is less than the minimum " + strconv.FormatInt(min, 10))
	}
	if n > max {
		return errString(strconv.Quote(v) + " is more than the maximum " + strconv.FormatInt(max, 10))
	}
	return nil
}

func topicEnum(name, brokerKey, doc string, allowed []string, f func(*TopicConfig) *string, from func(*Config) string) topicKey {
	return topicKey{
		name: name, brokerKey: brokerKey, doc: doc, typ: TypeString,
		parse: func(t *TopicConfig, v string) error {
			x, err := oneOf(v, allowed...)
			if err != nil {
				return err
			}
			*f(t) = x
			return nil
		},
		format:  func(t *TopicConfig) string { return *f(t) },
		inherit: func(t *TopicConfig, c *Config) { *f(t) = from(c) },
	}
}

// topicBool is a boolean topic key; check (may be nil) refuses values
// kbroker cannot honour.
func topicBool(name, brokerKey, doc string, check func(bool) error, f func(*TopicConfig) *bool, from func(*Config) bool) topicKey {
	return topicKey{
		name: name, brokerKey: brokerKey, doc: doc, typ: TypeBoolean,
		parse: func(t *TopicConfig, v string) error {
			x, err := parseBool(v)
			if err != nil {
				return err
			}
			if check != nil {
				if err := check(x); err != nil {
					return err
				}
			}
			*f(t) = x
			return nil
		},
		format:  func(t *TopicConfig) string { return strconv.FormatBool(*f(t)) },
		inherit: func(t *TopicConfig, c *Config) { *f(t) = from(c) },
	}
}

var topicKeyIndex = func() map[string]*topicKey {
	m := make(map[string]*topicKey, len(topicKeys))
	for i := range topicKeys {
		k := &topicKeys[i]
		for _, b := range append([]string{k.brokerKey}, k.aliases...) {
			if _, ok := keyIndex[b]; b != "" && !ok {
				panic("config: topic key " + k.name + " inherits unknown broker key " + b)
			}
		}
		if _, dup := m[k.name]; dup {
			panic("config: topic key defined twice: " + k.name)
		}
		m[k.name] = k
	}
	return m
}()

// TopicDefaults returns the configuration of a topic with no overrides.
func (c *Config) TopicDefaults() TopicConfig {
	var t TopicConfig
	for i := range topicKeys {
		topicKeys[i].inherit(&t, c)
	}
	return t
}

// ValidateTopicConfigs checks a topic's overrides (CreateTopics,
// AlterConfigs) against the built-in defaults: see
// Config.ValidateTopicConfigs.
func ValidateTopicConfigs(overrides map[string]string) error {
	d := Default()
	return d.ValidateTopicConfigs(overrides)
}

// ValidateTopicConfigs checks a topic's overrides (CreateTopics,
// AlterConfigs): every key must be a topic key and every value valid,
// including limits that depend on this node's broker keys
// (max.message.bytes <= socket.request.max.bytes). It returns the first
// problem in key order, as an *Error.
func (c *Config) ValidateTopicConfigs(overrides map[string]string) error {
	for _, name := range slices.Sorted(maps.Keys(overrides)) {
		k, ok := topicKeyIndex[name]
		if !ok {
			return &Error{Key: name, Err: ErrUnknownKey}
		}
		if err := k.check(c, overrides[name]); err != nil {
			return &Error{Key: name, Msg: err.Error(), Err: ErrInvalid}
		}
	}
	if err := checkRemoteCompact(c.ResolveTopic(overrides)); err != nil {
		return &Error{Key: "remote.storage.enable", Msg: err.Error(), Err: ErrInvalid}
	}
	return nil
}

// check parses v as this key's value and applies its bound.
func (k *topicKey) check(c *Config, v string) error {
	var scratch TopicConfig
	if err := k.parse(&scratch, v); err != nil {
		return err
	}
	if k.bound != nil {
		return k.bound(&scratch, c)
	}
	return nil
}

// ResolveTopic returns the topic's configuration: the broker defaults with
// overrides applied. Overrides should have passed ValidateTopicConfigs;
// unknown keys and bad values are ignored.
func (c *Config) ResolveTopic(overrides map[string]string) TopicConfig {
	return c.ResolveTopicIn(nil, overrides)
}

// ResolveTopicIn is ResolveTopic with the cluster-wide dynamic defaults
// (see ValidateClusterConfigs) layered between the broker's static config
// and the topic's overrides.
func (c *Config) ResolveTopicIn(cluster, overrides map[string]string) TopicConfig {
	return c.ResolveTopicFor(cluster, nil, overrides)
}

// ResolveTopicFor is ResolveTopicIn on a broker with its own per-broker
// dynamic values, layered over the cluster-wide defaults.
func (c *Config) ResolveTopicFor(cluster, broker, overrides map[string]string) TopicConfig {
	t := c.TopicDefaults()
	for _, layer := range []map[string]string{cluster, broker} {
		for name, v := range layer {
			// An invalid value of the upper layer leaves the lower
			// one's in effect.
			if k, ok := topicKeyByBrokerKey[name]; ok && k.check(c, v) == nil {
				_ = k.parse(&t, v)
			}
		}
	}
	for name, v := range overrides {
		// A value out of bounds here was stored before the bound
		// existed (or under another node's config): it is ignored, as
		// unparsable values are, rather than trusted.
		if k, ok := topicKeyIndex[name]; ok && k.check(c, v) == nil {
			_ = k.parse(&t, v)
		}
	}
	return t
}

// topicKeyByBrokerKey finds the topic key a broker key is the default of
// (log.retention.ms → retention.ms).
var topicKeyByBrokerKey = func() map[string]*topicKey {
	m := make(map[string]*topicKey, len(topicKeys))
	for i := range topicKeys {
		if topicKeys[i].brokerKey != "" {
			m[topicKeys[i].brokerKey] = &topicKeys[i]
		}
	}
	return m
}()

// ValidateClusterConfigs checks cluster-wide dynamic broker defaults
// against the built-in defaults: see Config.ValidateClusterConfigs.
func ValidateClusterConfigs(cluster map[string]string) error {
	d := Default()
	return d.ValidateClusterConfigs(cluster)
}

// ValidateClusterConfigs checks cluster-wide dynamic broker defaults (set
// with IncrementalAlterConfigs on the broker resource with an empty name):
// every key must be a broker key that backs a topic key (log.retention.ms,
// compression.type, min.insync.replicas, ...), with a value that topic key
// accepts on this node (message.max.bytes <= socket.request.max.bytes), or
// one of the few other dynamic broker keys (the replication throttle
// rates, the log cleaner's keys of cleaner_dynamic.go).
// These change topic defaults across the cluster at runtime.
func (c *Config) ValidateClusterConfigs(cluster map[string]string) error {
	for _, name := range slices.Sorted(maps.Keys(cluster)) {
		k, ok := topicKeyByBrokerKey[name]
		if !ok && dynamicBrokerKeys[name] {
			if err := checkDynamicBrokerKey(name, cluster[name]); err != nil {
				return &Error{Key: name, Msg: err.Error(), Err: ErrInvalid}
			}
			continue
		}
		if !ok {
			if _, static := keyIndex[name]; static {
				return &Error{Key: name, Msg: "is not dynamically updatable (only the broker keys behind topic configs, the replication throttle rates and log.cleaner.threads/backoff.ms/dedupe.buffer.size/io.max.bytes.per.second are)", Err: ErrInvalid}
			}
			if _, ignored := ignoredIndex[name]; ignored {
				return &Error{Key: name, Msg: "is a Kafka broker key kbroker ignores; it cannot be altered", Err: ErrInvalid}
			}
			return &Error{Key: name, Err: ErrUnknownKey}
		}
		if err := k.check(c, cluster[name]); err != nil {
			return &Error{Key: name, Msg: err.Error(), Err: ErrInvalid}
		}
	}
	return nil
}

// IsListTopicKey reports whether name is a topic key of Kafka's LIST type
// (cleanup.policy, the throttled replica lists): the only keys that
// IncrementalAlterConfigs may APPEND to or SUBTRACT from.
func IsListTopicKey(name string) bool {
	k, ok := topicKeyIndex[name]
	return ok && k.typ == TypeList
}
