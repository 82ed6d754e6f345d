package config

import (
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
)

// TopicConfig is one topic's resolved configuration: the broker's defaults
// overridden by the topic's own keys.
type TopicConfig struct {
	CleanupPolicy               string // cleanup.policy: delete, compact or compact,delete
	CompressionType             string // compression.type
	MaxMessageBytes             int32  // max.message.bytes
	MinInsyncReplicas           int32  // min.insync.replicas
	RetentionMs                 int64  // retention.ms; -1 forever
	RetentionBytes              int64  // retention.bytes; -1 no limit
	SegmentBytes                int64  // segment.bytes
	SegmentMs                   int64  // segment.ms
	SegmentIndexBytes           int32  // segment.index.bytes
	IndexIntervalBytes          int32  // index.interval.bytes
	FlushMessages               int64  // flush.messages
	FlushMs                     int64  // flush.ms; MaxInt64 never
	MessageTimestampType        string // message.timestamp.type
	MessageTimestampBeforeMaxMs int64  // message.timestamp.before.max.ms
	MessageTimestampAfterMaxMs  int64  // message.timestamp.after.max.ms
	UncleanLeaderElectionEnable bool   // unclean.leader.election.enable
}

// topicKey defines one topic key and the broker key its default comes from.
type topicKey struct {
	name      string
	brokerKey string
	doc       string
	parse     func(t *TopicConfig, v string) error // syntax and range
	format    func(t *TopicConfig) string
	inherit   func(t *TopicConfig, c *Config) // copy the broker default
	// bound, when set, checks a parsed value against this node's broker
	// config (limits that depend on other keys).
	bound func(t *TopicConfig, c *Config) error
}

func topicInt[T integer](name, brokerKey, doc string, min T, f func(*TopicConfig) *T, from func(*Config) T) topicKey {
	return topicKey{
		name: name, brokerKey: brokerKey, doc: doc,
		parse: func(t *TopicConfig, v string) error {
			n, err := parseInt[T](v)
			if err != nil {
				return err
			}
			if n < min {
				return errString(strconv.Quote(v) + " is less than the minimum " + strconv.FormatInt(int64(min), 10))
			}
			*f(t) = n
			return nil
		},
		format:  func(t *TopicConfig) string { return strconv.FormatInt(int64(*f(t)), 10) },
		inherit: func(t *TopicConfig, c *Config) { *f(t) = from(c) },
	}
}

func topicEnum(name, brokerKey, doc string, allowed []string, f func(*TopicConfig) *string, from func(*Config) string) topicKey {
	return topicKey{
		name: name, brokerKey: brokerKey, doc: doc,
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

// topicKeys is the table of topic keys.
var topicKeys = []topicKey{
	{
		name: "cleanup.policy", brokerKey: "log.cleanup.policy",
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
	withBound(topicInt("max.message.bytes", "message.max.bytes", "Largest record batch accepted, after compression; at most socket.request.max.bytes.", 0,
		func(t *TopicConfig) *int32 { return &t.MaxMessageBytes },
		func(c *Config) int32 { return c.MessageMaxBytes }),
		checkMaxMessageBytes),
	topicInt("min.insync.replicas", "min.insync.replicas", "Replicas that must have a batch before acks=all succeeds.", 1,
		func(t *TopicConfig) *int32 { return &t.MinInsyncReplicas },
		func(c *Config) int32 { return c.MinInsyncReplicas }),
	topicInt("retention.ms", "log.retention.ms", "Age after which segments are deleted; -1 keeps them forever.", -1,
		func(t *TopicConfig) *int64 { return &t.RetentionMs },
		func(c *Config) int64 { return c.LogRetentionMs }),
	topicInt("retention.bytes", "log.retention.bytes", "Partition size above which old segments are deleted; -1 is no limit.", -1,
		func(t *TopicConfig) *int64 { return &t.RetentionBytes },
		func(c *Config) int64 { return c.LogRetentionBytes }),
	topicInt("segment.bytes", "log.segment.bytes", "Size at which a segment is rolled.", minSegmentBytes,
		func(t *TopicConfig) *int64 { return &t.SegmentBytes },
		func(c *Config) int64 { return c.LogSegmentBytes }),
	topicInt("segment.ms", "log.roll.ms", "Age at which a segment is rolled.", 1,
		func(t *TopicConfig) *int64 { return &t.SegmentMs },
		func(c *Config) int64 { return c.LogRollMs }),
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
	topicEnum("message.timestamp.type", "log.message.timestamp.type", "Timestamp stored in batches.", timestampTypes,
		func(t *TopicConfig) *string { return &t.MessageTimestampType },
		func(c *Config) string { return c.LogMessageTimestampType }),
	topicInt("message.timestamp.before.max.ms", "log.message.timestamp.before.max.ms", "How far in the past a CreateTime timestamp may be.", 0,
		func(t *TopicConfig) *int64 { return &t.MessageTimestampBeforeMaxMs },
		func(c *Config) int64 { return c.LogMessageTimestampBeforeMaxMs }),
	topicInt("message.timestamp.after.max.ms", "log.message.timestamp.after.max.ms", "How far in the future a CreateTime timestamp may be.", 0,
		func(t *TopicConfig) *int64 { return &t.MessageTimestampAfterMaxMs },
		func(c *Config) int64 { return c.LogMessageTimestampAfterMaxMs }),
	{
		name: "unclean.leader.election.enable", brokerKey: "unclean.leader.election.enable",
		doc: "Elect a leader from outside the ISR when no ISR member is alive (may lose data).",
		parse: func(t *TopicConfig, v string) error {
			x, err := parseBool(v)
			if err == nil {
				t.UncleanLeaderElectionEnable = x
			}
			return err
		},
		format:  func(t *TopicConfig) string { return strconv.FormatBool(t.UncleanLeaderElectionEnable) },
		inherit: func(t *TopicConfig, c *Config) { t.UncleanLeaderElectionEnable = c.UncleanLeaderElectionEnable },
	},
}

var topicKeyIndex = func() map[string]*topicKey {
	m := make(map[string]*topicKey, len(topicKeys))
	for i := range topicKeys {
		if _, ok := keyIndex[topicKeys[i].brokerKey]; !ok {
			panic("config: topic key " + topicKeys[i].name + " inherits unknown broker key " + topicKeys[i].brokerKey)
		}
		m[topicKeys[i].name] = &topicKeys[i]
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
	t := c.TopicDefaults()
	for name, v := range cluster {
		if k, ok := topicKeyByBrokerKey[name]; ok && k.check(c, v) == nil {
			_ = k.parse(&t, v)
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

// Kafka's ConfigSource numbering (DescribeConfigs v1+).
const (
	SourceDynamicTopic         int8 = 1 // DYNAMIC_TOPIC_CONFIG
	SourceDynamicDefaultBroker int8 = 3 // DYNAMIC_DEFAULT_BROKER_CONFIG
	SourceStaticBroker         int8 = 4 // STATIC_BROKER_CONFIG
	SourceDefaultConfig        int8 = 5 // DEFAULT_CONFIG
)

// topicKeyByBrokerKey finds the topic key a broker key is the default of
// (log.retention.ms → retention.ms).
var topicKeyByBrokerKey = func() map[string]*topicKey {
	m := make(map[string]*topicKey, len(topicKeys))
	for i := range topicKeys {
		m[topicKeys[i].brokerKey] = &topicKeys[i]
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
// accepts on this node (message.max.bytes <= socket.request.max.bytes).
// These change topic defaults across the cluster at runtime.
func (c *Config) ValidateClusterConfigs(cluster map[string]string) error {
	for _, name := range slices.Sorted(maps.Keys(cluster)) {
		k, ok := topicKeyByBrokerKey[name]
		if !ok {
			if _, static := keyIndex[name]; static {
				return &Error{Key: name, Msg: "is not dynamically updatable (only the broker keys behind topic configs are)", Err: ErrInvalid}
			}
			return &Error{Key: name, Err: ErrUnknownKey}
		}
		if err := k.check(c, cluster[name]); err != nil {
			return &Error{Key: name, Msg: err.Error(), Err: ErrInvalid}
		}
	}
	return nil
}

// ConfigEntry is one row of a DescribeConfigs response.
type ConfigEntry struct {
	Name      string
	Value     string
	IsDefault bool
	Source    int8 // SourceDynamicTopic, SourceStaticBroker or SourceDefaultConfig
	Sensitive bool
	ReadOnly  bool
}

// TopicConfigEntries describes every topic key of a topic with these
// overrides, sorted by name: an override is DYNAMIC_TOPIC_CONFIG; an
// inherited value is STATIC_BROKER_CONFIG when this node's broker key
// differs from the built-in default, else DEFAULT_CONFIG.
func (c *Config) TopicConfigEntries(overrides map[string]string) []ConfigEntry {
	return c.TopicConfigEntriesIn(nil, overrides)
}

// TopicConfigEntriesIn is TopicConfigEntries with cluster-wide dynamic
// defaults.
func (c *Config) TopicConfigEntriesIn(cluster, overrides map[string]string) []ConfigEntry {
	resolved := c.ResolveTopicIn(cluster, overrides)
	mine := c.TopicDefaults()
	d := Default()
	builtin := d.TopicDefaults()
	out := make([]ConfigEntry, 0, len(topicKeys))
	for i := range topicKeys {
		k := &topicKeys[i]
		e := ConfigEntry{Name: k.name, Value: k.format(&resolved)}
		var scratch TopicConfig
		if v, ok := overrides[k.name]; ok && k.parse(&scratch, v) == nil {
			e.Source = SourceDynamicTopic
		} else if v, ok := cluster[k.brokerKey]; ok && k.parse(&scratch, v) == nil {
			e.Source = SourceDynamicDefaultBroker
		} else if k.format(&mine) != k.format(&builtin) {
			e.Source = SourceStaticBroker
		} else {
			e.Source, e.IsDefault = SourceDefaultConfig, true
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// BrokerConfigEntries describes every broker key of this node, sorted by
// name. All are static (read-only): kbroker has no dynamic broker configs.
func (c *Config) BrokerConfigEntries() []ConfigEntry {
	return c.BrokerConfigEntriesIn(nil)
}

// BrokerConfigEntriesIn is BrokerConfigEntries with the cluster-wide
// dynamic defaults shown where they apply (and those keys writable).
func (c *Config) BrokerConfigEntriesIn(cluster map[string]string) []ConfigEntry {
	d := Default()
	out := make([]ConfigEntry, 0, len(keys))
	for i := range keys {
		k := &keys[i]
		_, dynamic := topicKeyByBrokerKey[k.name]
		e := ConfigEntry{Name: k.name, Value: k.format(c), ReadOnly: !dynamic, Sensitive: k.sensitive}
		if v, ok := cluster[k.name]; ok && dynamic {
			e.Value, e.Source = v, SourceDynamicDefaultBroker
		} else if e.Value == k.format(&d) {
			e.Source, e.IsDefault = SourceDefaultConfig, true
		} else {
			e.Source = SourceStaticBroker
		}
		if e.Sensitive {
			e.Value = "" // never leaves the config package
		}
		out = append(out, e)
	}
	out = append(out, c.listenerSecurityEntries()...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
