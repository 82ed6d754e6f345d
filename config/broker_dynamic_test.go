package config

import (
	"reflect"
	"strconv"
	"testing"
)

// TestDynamicBrokerPrecedence: a broker key's effective value and source
// follow Kafka's order, per-broker dynamic > cluster-wide dynamic default >
// static > built-in default, with every layer set listed as a synonym in
// that order; the same holds for the topic keys behind broker keys, under a
// topic override.
func TestDynamicBrokerPrecedence(t *testing.T) {
	static, err := Load("", nil, []string{"log.retention.ms=3000", "log.cleaner.threads=3"})
	if err != nil {
		t.Fatal(err)
	}
	d := Default()
	const key = "log.retention.ms"
	cases := []struct {
		name             string
		cfg              *Config
		cluster, broker  map[string]string
		wantValue        string
		wantSource       int8
		wantSynonymOrder []int8
	}{
		{"built-in default", &d, nil, nil, "604800000", SourceDefaultConfig,
			[]int8{SourceDefaultConfig}},
		{"static", &static, nil, nil, "3000", SourceStaticBroker,
			[]int8{SourceStaticBroker, SourceDefaultConfig}},
		{"cluster default over static", &static, map[string]string{key: "2000"}, nil, "2000", SourceDynamicDefaultBroker,
			[]int8{SourceDynamicDefaultBroker, SourceStaticBroker, SourceDefaultConfig}},
		{"per-broker over cluster default", &static, map[string]string{key: "2000"}, map[string]string{key: "1000"}, "1000", SourceDynamicBroker,
			[]int8{SourceDynamicBroker, SourceDynamicDefaultBroker, SourceStaticBroker, SourceDefaultConfig}},
		{"per-broker alone over the default", &d, nil, map[string]string{key: "1000"}, "1000", SourceDynamicBroker,
			[]int8{SourceDynamicBroker, SourceDefaultConfig}},
		{"another key per-broker leaves this one", &static, map[string]string{key: "2000"}, map[string]string{"log.cleaner.threads": "5"}, "2000", SourceDynamicDefaultBroker,
			[]int8{SourceDynamicDefaultBroker, SourceStaticBroker, SourceDefaultConfig}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := entryNamed(t, tc.cfg.BrokerConfigEntriesFor(tc.cluster, tc.broker), key)
			if e.Value != tc.wantValue || e.Source != tc.wantSource || e.ReadOnly {
				t.Errorf("broker entry %s=%s source %d read-only %v, want %s source %d writable", key, e.Value, e.Source, e.ReadOnly, tc.wantValue, tc.wantSource)
			}
			if got := synonymSources(e); !reflect.DeepEqual(got, tc.wantSynonymOrder) {
				t.Errorf("broker synonyms %v, want %v", got, tc.wantSynonymOrder)
			}
			if e.IsDefault != (tc.wantSource == SourceDefaultConfig) {
				t.Errorf("IsDefault %v", e.IsDefault)
			}

			// retention.ms inherits log.retention.ms the same way.
			te := entryNamed(t, tc.cfg.TopicConfigEntriesFor(tc.cluster, tc.broker, nil), "retention.ms")
			if te.Value != tc.wantValue || te.Source != tc.wantSource {
				t.Errorf("topic entry retention.ms=%s source %d, want %s source %d", te.Value, te.Source, tc.wantValue, tc.wantSource)
			}
			if got := synonymSources(te); !reflect.DeepEqual(got, tc.wantSynonymOrder) {
				t.Errorf("topic synonyms %v, want %v", got, tc.wantSynonymOrder)
			}
			if got := tc.cfg.ResolveTopicFor(tc.cluster, tc.broker, nil).RetentionMs; strconv.FormatInt(got, 10) != tc.wantValue {
				t.Errorf("resolved retention.ms %d, want %s", got, tc.wantValue)
			}
			// A topic override beats every broker layer.
			over := tc.cfg.TopicConfigEntriesFor(tc.cluster, tc.broker, map[string]string{"retention.ms": "7"})
			if oe := entryNamed(t, over, "retention.ms"); oe.Value != "7" || oe.Source != SourceDynamicTopic {
				t.Errorf("override: retention.ms=%s source %d", oe.Value, oe.Source)
			}
		})
	}
}

// TestDynamicBrokerRuntimeValues: the values a broker runs with (cleaner,
// replication throttles) come from the per-broker layer over the cluster
// default, given the merged map the broker computes.
func TestDynamicBrokerRuntimeValues(t *testing.T) {
	d := Default()
	cases := []struct {
		name         string
		dynamic      map[string]string
		wantThreads  int32
		wantLeader   int64
		wantFollower int64
	}{
		{"static", nil, d.LogCleanerThreads, d.LeaderReplicationThrottledRate, d.FollowerReplicationThrottledRate},
		{"dynamic", map[string]string{"log.cleaner.threads": "4", LeaderReplicationThrottledRate: "100"}, 4, 100, d.FollowerReplicationThrottledRate},
		{"invalid stays static", map[string]string{"log.cleaner.threads": "0", FollowerReplicationThrottledRate: "x"}, d.LogCleanerThreads, d.LeaderReplicationThrottledRate, d.FollowerReplicationThrottledRate},
	}
	for _, tc := range cases {
		if got := d.CleanerSettingsIn(tc.dynamic).Threads; got != tc.wantThreads {
			t.Errorf("%s: threads %d, want %d", tc.name, got, tc.wantThreads)
		}
		l, f := d.ReplicationThrottledRates(tc.dynamic)
		if l != tc.wantLeader || f != tc.wantFollower {
			t.Errorf("%s: rates %d/%d, want %d/%d", tc.name, l, f, tc.wantLeader, tc.wantFollower)
		}
	}
}

func entryNamed(t *testing.T, entries []ConfigEntry, name string) ConfigEntry {
	t.Helper()
	for _, e := range entries {
		if e.Name == name {
			return e
		}
	}
	t.Fatalf("no entry %s", name)
	return ConfigEntry{}
}

func synonymSources(e ConfigEntry) []int8 {
	var out []int8
	for _, s := range e.Synonyms {
		out = append(out, s.Source)
	}
	return out
}
