package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// describeTopicConfig describes one key of a topic with synonyms and
// documentation.
func describeTopicConfig(t *testing.T, ctx context.Context, cl *kgo.Client, topic, key string) kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms, req.IncludeDocumentation = true, true
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = kmsg.ConfigResourceTypeTopic, topic, []string{key}
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 || len(resp.Resources[0].Configs) != 1 {
		t.Fatalf("describe %s %s: %+v", topic, key, resp.Resources)
	}
	return resp.Resources[0].Configs[0]
}

func alterTopicConfig(t *testing.T, ctx context.Context, cl *kgo.Client, topic, key, value string) error {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value, c.Op = key, &value, kmsg.IncrementalAlterConfigOpSet
	r.Configs = append(r.Configs, c)
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	return kerr.ErrorForCode(resp.Resources[0].ErrorCode)
}

// Every topic-level key kbroker gained for Kafka 4.x parity: set at
// creation, described as the topic's own with its type, documentation and
// synonyms, altered at runtime, and refused with a bad value.
func TestNewTopicKeysOverTheWire(t *testing.T) {
	node := startNode(t, "", "log.cleaner.delete.retention.ms=5000")
	cl, err := kgo.NewClient(kgo.SeedBrokers(node.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	tests := []struct {
		key, create, alter, bad string
		typ                     kmsg.ConfigType
		defaultName             string // the DEFAULT_CONFIG synonym
	}{
		{"delete.retention.ms", "1000", "2000", "-1", kmsg.ConfigTypeLong, "log.cleaner.delete.retention.ms"},
		{"min.compaction.lag.ms", "1000", "0", "x", kmsg.ConfigTypeLong, "log.cleaner.min.compaction.lag.ms"},
		{"max.compaction.lag.ms", "60000", "120000", "0", kmsg.ConfigTypeLong, "log.cleaner.max.compaction.lag.ms"},
		{"min.cleanable.dirty.ratio", "0.1", "0.9", "2", kmsg.ConfigTypeDouble, "log.cleaner.min.cleanable.ratio"},
		{"segment.jitter.ms", "100", "200", "-5", kmsg.ConfigTypeLong, "log.roll.jitter.ms"},
		{"file.delete.delay.ms", "0", "1000", "-1", kmsg.ConfigTypeLong, "log.segment.delete.delay.ms"},
		{"preallocate", "true", "false", "maybe", kmsg.ConfigTypeBoolean, "log.preallocate"},
		{"compression.gzip.level", "9", "1", "10", kmsg.ConfigTypeInt, "compression.gzip.level"},
		{"compression.lz4.level", "12", "1", "0", kmsg.ConfigTypeInt, "compression.lz4.level"},
		{"compression.zstd.level", "19", "-3", "23", kmsg.ConfigTypeInt, "compression.zstd.level"},
		{"leader.replication.throttled.replicas", "0:1", "*", "zero", kmsg.ConfigTypeList, "leader.replication.throttled.replicas"},
		{"follower.replication.throttled.replicas", "*", "0:1,1:1", "1", kmsg.ConfigTypeList, "follower.replication.throttled.replicas"},
		{"message.downconversion.enable", "false", "true", "no", kmsg.ConfigTypeBoolean, "message.downconversion.enable"},
		{"local.retention.ms", "1000", "-2", "-3", kmsg.ConfigTypeLong, "log.local.retention.ms"},
		{"local.retention.bytes", "1000", "-1", "-3", kmsg.ConfigTypeLong, "log.local.retention.bytes"},
		{"remote.log.copy.disable", "true", "false", "x", kmsg.ConfigTypeBoolean, "remote.log.copy.disable"},
		{"remote.log.delete.on.disable", "true", "false", "x", kmsg.ConfigTypeBoolean, "remote.log.delete.on.disable"},
		{"remote.storage.enable", "false", "false", "true", kmsg.ConfigTypeBoolean, "remote.storage.enable"},
	}
	for _, tc := range tests {
		t.Run(tc.key, func(t *testing.T) {
			topic := "t-" + strings.ReplaceAll(tc.key, ".", "-")
			v := tc.create
			createTopic(t, node.addr, topic, 1, map[string]*string{tc.key: &v})
			check := func(want string) {
				t.Helper()
				c := describeTopicConfig(t, ctx, cl, topic, tc.key)
				if c.Value == nil || *c.Value != want || c.Source != kmsg.ConfigSourceDynamicTopicConfig || c.IsDefault {
					t.Fatalf("described %v from %v", c.Value, c.Source)
				}
				if c.ConfigType != tc.typ || c.Documentation == nil || *c.Documentation == "" {
					t.Fatalf("type %v, documentation %v", c.ConfigType, c.Documentation)
				}
				syn := c.ConfigSynonyms
				if len(syn) < 2 || syn[0].Name != tc.key || syn[0].Source != kmsg.ConfigSourceDynamicTopicConfig ||
					syn[len(syn)-1].Name != tc.defaultName || syn[len(syn)-1].Source != kmsg.ConfigSourceDefaultConfig {
					t.Fatalf("synonyms %+v", syn)
				}
			}
			check(tc.create)
			if err := alterTopicConfig(t, ctx, cl, topic, tc.key, tc.alter); err != nil {
				t.Fatalf("alter: %v", err)
			}
			check(tc.alter)
			if err := alterTopicConfig(t, ctx, cl, topic, tc.key, tc.bad); !errors.Is(err, kerr.InvalidConfig) {
				t.Fatalf("bad value %q: %v", tc.bad, err)
			}
			check(tc.alter)
		})
	}

	// The static broker key is the default of a topic without override.
	createTopic(t, node.addr, "plain", 1, nil)
	c := describeTopicConfig(t, ctx, cl, "plain", "delete.retention.ms")
	if *c.Value != "5000" || c.Source != kmsg.ConfigSourceStaticBrokerConfig ||
		c.ConfigSynonyms[0].Name != "log.cleaner.delete.retention.ms" || len(c.ConfigSynonyms) != 2 {
		t.Fatalf("delete.retention.ms from the broker: %v %v %+v", *c.Value, c.Source, c.ConfigSynonyms)
	}

	// Tiered storage is refused at creation on a broker without
	// remote.log.storage.system.enable, with the reason.
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "tiered", 1, 1
	on := "true"
	rt.Configs = append(rt.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: "remote.storage.enable", Value: &on})
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	tr := resp.Topics[0]
	if tr.ErrorCode != kerr.InvalidConfig.Code || tr.ErrorMessage == nil || !strings.Contains(*tr.ErrorMessage, "remote.log.storage.system.enable=false") {
		t.Fatalf("remote.storage.enable=true: code %d message %v", tr.ErrorCode, tr.ErrorMessage)
	}
}

// APPEND and SUBTRACT apply to list keys only, as in Kafka.
func TestAppendOnlyToListKeys(t *testing.T) {
	node := startNode(t, "")
	cl, err := kgo.NewClient(kgo.SeedBrokers(node.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	createTopic(t, node.addr, "lists", 1, nil)
	for _, tc := range []struct {
		key, value string
		want       error
		described  string
	}{
		{"leader.replication.throttled.replicas", "0:1", nil, "0:1"},
		{"leader.replication.throttled.replicas", "1:1", nil, "0:1,1:1"},
		{"retention.ms", "1000", kerr.InvalidConfig, ""},
		{"min.cleanable.dirty.ratio", "0.1", kerr.InvalidConfig, ""},
	} {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "lists"
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		v := tc.value
		c.Name, c.Value, c.Op = tc.key, &v, kmsg.IncrementalAlterConfigOpAppend
		r.Configs = append(r.Configs, c)
		req.Resources = append(req.Resources, r)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if got := kerr.ErrorForCode(resp.Resources[0].ErrorCode); !errors.Is(got, tc.want) {
			t.Fatalf("append %s=%s: %v, want %v", tc.key, tc.value, got, tc.want)
		}
		if tc.described != "" {
			if d := describeTopicConfig(t, ctx, cl, "lists", tc.key); *d.Value != tc.described {
				t.Fatalf("%s = %q, want %q", tc.key, *d.Value, tc.described)
			}
		}
	}
}
