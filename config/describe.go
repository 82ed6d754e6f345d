package config

import (
	"sort"
)

// Kafka's ConfigSource numbering (DescribeConfigs v1+).
const (
	SourceDynamicTopic         int8 = 1 // DYNAMIC_TOPIC_CONFIG
	SourceDynamicBroker        int8 = 2 // DYNAMIC_BROKER_CONFIG (per-broker)
	SourceDynamicDefaultBroker int8 = 3 // DYNAMIC_DEFAULT_BROKER_CONFIG
	SourceStaticBroker         int8 = 4 // STATIC_BROKER_CONFIG
	SourceDefaultConfig        int8 = 5 // DEFAULT_CONFIG
)

// Kafka's ConfigType numbering (DescribeConfigs v3+).
const (
	TypeBoolean  int8 = 1
	TypeString   int8 = 2
	TypeInt      int8 = 3
	TypeShort    int8 = 4
	TypeLong     int8 = 5
	TypeDouble   int8 = 6
	TypeList     int8 = 7
	TypeClass    int8 = 8
	TypePassword int8 = 9
)

func intType[T integer]() int8 {
	switch bitsOf[T]() {
	case 16:
		return TypeShort
	case 32:
		return TypeInt
	}
	return TypeLong
}

// ConfigEntry is one row of a DescribeConfigs response.
type ConfigEntry struct {
	Name      string
	Value     string
	IsDefault bool
	Source    int8 // SourceDynamicTopic, SourceDynamicBroker, SourceDynamicDefaultBroker, SourceStaticBroker or SourceDefaultConfig
	Sensitive bool
	ReadOnly  bool
	Type      int8   // TypeBoolean ... TypePassword
	Doc       string // one-line documentation
	// Synonyms are the places the value could come from, highest
	// precedence first, as Kafka lists them with IncludeSynonyms: the
	// topic override, the broker's own dynamic value, the cluster-wide
	// dynamic default, the static broker keys that were set, the built-in
	// default.
	Synonyms []Synonym
}

// Synonym is one of a ConfigEntry's synonyms.
type Synonym struct {
	Name   string
	Value  string
	Source int8
}

// TopicConfigEntries describes every topic key of a topic with these
// overrides, sorted by name: an override is DYNAMIC_TOPIC_CONFIG; an
// inherited value is STATIC_BROKER_CONFIG when a broker synonym was set in
// this node's config, else DEFAULT_CONFIG.
func (c *Config) TopicConfigEntries(overrides map[string]string) []ConfigEntry {
	return c.TopicConfigEntriesIn(nil, overrides)
}

// TopicConfigEntriesIn is TopicConfigEntries with cluster-wide dynamic
// defaults.
func (c *Config) TopicConfigEntriesIn(cluster, overrides map[string]string) []ConfigEntry {
	return c.TopicConfigEntriesFor(cluster, nil, overrides)
}

// TopicConfigEntriesFor is TopicConfigEntriesIn on a broker with its own
// per-broker dynamic values (DYNAMIC_BROKER_CONFIG), which come before
// the cluster-wide defaults.
func (c *Config) TopicConfigEntriesFor(cluster, broker, overrides map[string]string) []ConfigEntry {
	resolved := c.ResolveTopicFor(cluster, broker, overrides)
	d := Default()
	builtin := d.TopicDefaults()
	out := make([]ConfigEntry, 0, len(topicKeys))
	for i := range topicKeys {
		k := &topicKeys[i]
		e := ConfigEntry{Name: k.name, Value: k.format(&resolved), Type: k.typ, Doc: k.doc}
		var scratch TopicConfig
		if v, ok := overrides[k.name]; ok && k.check(c, v) == nil && k.parse(&scratch, v) == nil {
			e.Synonyms = append(e.Synonyms, Synonym{k.name, k.format(&scratch), SourceDynamicTopic})
		}
		if k.brokerKey != "" {
			scratch = TopicConfig{}
			if v, ok := broker[k.brokerKey]; ok && k.check(c, v) == nil && k.parse(&scratch, v) == nil {
				e.Synonyms = append(e.Synonyms, Synonym{k.brokerKey, k.format(&scratch), SourceDynamicBroker})
			}
			scratch = TopicConfig{}
			if v, ok := cluster[k.brokerKey]; ok && k.check(c, v) == nil && k.parse(&scratch, v) == nil {
				e.Synonyms = append(e.Synonyms, Synonym{k.brokerKey, k.format(&scratch), SourceDynamicDefaultBroker})
			}
			for _, b := range append([]string{k.brokerKey}, k.aliases...) {
				if s, ok := c.given[b]; ok {
					e.Synonyms = append(e.Synonyms, Synonym{b, s, SourceStaticBroker})
				}
			}
		}
		def := k.name
		if k.brokerKey != "" {
			def = k.brokerKey
		}
		e.Synonyms = append(e.Synonyms, Synonym{def, k.format(&builtin), SourceDefaultConfig})
		e.Source = e.Synonyms[0].Source
		e.IsDefault = e.Source == SourceDefaultConfig
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
// dynamic defaults shown where they apply (and those keys writable). The
// Kafka keys kbroker accepts and ignores are listed too, with the value
// they were given.
func (c *Config) BrokerConfigEntriesIn(cluster map[string]string) []ConfigEntry {
	return c.BrokerConfigEntriesFor(cluster, nil)
}

// BrokerConfigEntriesFor is BrokerConfigEntriesIn for a broker with its
// own per-broker dynamic values, in Kafka's precedence: per-broker
// (DYNAMIC_BROKER_CONFIG), cluster-wide default
// (DYNAMIC_DEFAULT_BROKER_CONFIG), static (STATIC_BROKER_CONFIG), built-in
// default (DEFAULT_CONFIG).
func (c *Config) BrokerConfigEntriesFor(cluster, broker map[string]string) []ConfigEntry {
	d := Default()
	out := make([]ConfigEntry, 0, len(keys)+len(c.Ignored))
	for i := range keys {
		k := &keys[i]
		_, dynamic := topicKeyByBrokerKey[k.name]
		dynamic = dynamic || dynamicBrokerKeys[k.name]
		e := ConfigEntry{Name: k.name, Value: k.format(c), ReadOnly: !dynamic, Type: k.typ, Doc: k.doc, Sensitive: k.sensitive}
		if e.Type == 0 {
			e.Type = TypeString
		}
		if v, ok := broker[k.name]; ok && dynamic {
			e.Synonyms = append(e.Synonyms, Synonym{k.name, v, SourceDynamicBroker})
		}
		if v, ok := cluster[k.name]; ok && dynamic {
			e.Synonyms = append(e.Synonyms, Synonym{k.name, v, SourceDynamicDefaultBroker})
		}
		if s, ok := c.given[k.name]; ok {
			e.Synonyms = append(e.Synonyms, Synonym{k.name, s, SourceStaticBroker})
		} else if e.Value != k.format(&d) {
			// Derived from another key that was set (log.retention.ms
			// from log.retention.hours).
			e.Synonyms = append(e.Synonyms, Synonym{k.name, e.Value, SourceStaticBroker})
		}
		e.Synonyms = append(e.Synonyms, Synonym{k.name, k.format(&d), SourceDefaultConfig})
		e.Source = e.Synonyms[0].Source
		if e.Source == SourceDynamicBroker || e.Source == SourceDynamicDefaultBroker {
			e.Value = e.Synonyms[0].Value
		}
		e.IsDefault = e.Source == SourceDefaultConfig
		out = append(out, redactSensitive(e))
	}
	out = append(out, c.listenerSecurityEntries()...)
	for _, ig := range c.Ignored {
		k := ignoredIndex[ig.Name]
		e := ConfigEntry{Name: ig.Name, Value: ig.Value, Source: SourceStaticBroker, ReadOnly: true,
			Type: k.typ, Sensitive: k.typ == TypePassword, Doc: "Kafka broker key, accepted and ignored by kbroker: " + k.why}
		e.Synonyms = []Synonym{{ig.Name, ig.Value, SourceStaticBroker}}
		out = append(out, redactSensitive(e))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// redactSensitive blanks a secret's value and its synonyms' values: a
// password never leaves the config package (DescribeConfigs sends null).
func redactSensitive(e ConfigEntry) ConfigEntry {
	if !e.Sensitive {
		return e
	}
	e.Value = ""
	syn := make([]Synonym, len(e.Synonyms))
	for i, s := range e.Synonyms {
		s.Value = ""
		syn[i] = s
	}
	e.Synonyms = syn
	return e
}
