package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Topic configs set with IncrementalAlterConfigs show up in
// DescribeConfigs as topic overrides; deleting one returns the default.
func TestAlterAndDescribeTopicConfigs(t *testing.T) {
	node := startNode(t, "", "log.retention.hours=100")
	createTopic(t, node.addr, "cfg", 1, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(node.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	describe := func(name string) kadm.Config {
		t.Helper()
		rc, err := adm.DescribeTopicConfigs(ctx, "cfg")
		if err != nil {
			t.Fatal(err)
		}
		r, err := rc.On("cfg", nil)
		if err != nil || r.Err != nil {
			t.Fatalf("describe: %v %v", err, r.Err)
		}
		for _, c := range r.Configs {
			if c.Key == name {
				return c
			}
		}
		t.Fatalf("%s not described", name)
		return kadm.Config{}
	}
	if c := describe("retention.ms"); c.MaybeValue() != "360000000" || c.Source.String() != "STATIC_BROKER_CONFIG" {
		t.Fatalf("retention.ms before: %q from %v", c.MaybeValue(), c.Source)
	}

	alter := func(op kadm.IncrementalOp, key, value string) error {
		t.Helper()
		res, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: op, Name: key, Value: &value}}, "cfg")
		if err != nil {
			t.Fatal(err)
		}
		return res[0].Err
	}
	if err := alter(kadm.SetConfig, "retention.ms", "60000"); err != nil {
		t.Fatal(err)
	}
	if c := describe("retention.ms"); c.MaybeValue() != "60000" || c.Source.String() != "DYNAMIC_TOPIC_CONFIG" {
		t.Fatalf("retention.ms after set: %q from %v", c.MaybeValue(), c.Source)
	}
	if err := alter(kadm.AppendConfig, "cleanup.policy", "compact"); err != nil {
		t.Fatal(err)
	}
	if c := describe("cleanup.policy"); c.MaybeValue() != "compact,delete" {
		t.Fatalf("cleanup.policy after append: %q", c.MaybeValue())
	}
	if err := alter(kadm.SetConfig, "retention.ms", "soon"); err == nil {
		t.Fatal("a bad value was accepted")
	}
	if err := alter(kadm.DeleteConfig, "retention.ms", ""); err != nil {
		t.Fatal(err)
	}
	if c := describe("retention.ms"); c.MaybeValue() != "360000000" {
		t.Fatalf("retention.ms after delete: %q", c.MaybeValue())
	}
}

// CreatePartitions raises the partition count; lowering it is refused.
func TestCreatePartitions(t *testing.T) {
	node := startNode(t, "")
	createTopic(t, node.addr, "grow", 2, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(node.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := adm.UpdatePartitions(ctx, 5, "grow")
	if err != nil || res["grow"].Err != nil {
		t.Fatalf("grow to 5: %v %v", err, res["grow"].Err)
	}
	td, err := adm.ListTopics(ctx, "grow")
	if err != nil || len(td["grow"].Partitions) != 5 {
		t.Fatalf("after growing: %v, %d partitions", err, len(td["grow"].Partitions))
	}
	res, _ = adm.UpdatePartitions(ctx, 3, "grow")
	if res["grow"].Err == nil {
		t.Fatal("shrinking to 3 partitions was accepted")
	}
	// The new partitions take records.
	acked := produceAll(t, node.addr, "grow", 500)
	checkAcked(t, acked, consumeAll(t, node.addr, "grow", 500))
}

// A cluster-wide dynamic default (broker resource, empty name) changes the
// default of every topic without one of its own, at runtime.
func TestClusterDynamicDefaults(t *testing.T) {
	node := startNode(t, "")
	createTopic(t, node.addr, "plain", 1, nil)
	createTopic(t, node.addr, "own", 1, map[string]*string{"retention.ms": ptr("5000")})
	cl, err := kgo.NewClient(kgo.SeedBrokers(node.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	topicValue := func(topic, key string) kadm.Config {
		t.Helper()
		rc, err := adm.DescribeTopicConfigs(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		r, err := rc.On(topic, nil)
		if err != nil || r.Err != nil {
			t.Fatalf("describe %s: %v %v", topic, err, r.Err)
		}
		for _, c := range r.Configs {
			if c.Key == key {
				return c
			}
		}
		t.Fatalf("%s not described", key)
		return kadm.Config{}
	}
	v := "60000"
	res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "log.retention.ms", Value: &v}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("alter cluster default: %v %v", err, res)
	}
	if c := topicValue("plain", "retention.ms"); c.MaybeValue() != "60000" || c.Source.String() != "DYNAMIC_DEFAULT_BROKER_CONFIG" {
		t.Fatalf("plain retention.ms %q from %v", c.MaybeValue(), c.Source)
	}
	if c := topicValue("own", "retention.ms"); c.MaybeValue() != "5000" {
		t.Fatalf("a topic override lost to the cluster default: %q", c.MaybeValue())
	}
	bad := "7"
	res, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "num.partitions", Value: &bad}})
	if err == nil && res[0].Err == nil {
		t.Fatal("a static broker key was altered dynamically")
	}
	res, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "log.retention.ms"}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("delete cluster default: %v %v", err, res)
	}
	if c := topicValue("plain", "retention.ms"); c.MaybeValue() != "604800000" {
		t.Fatalf("plain retention.ms after delete: %q", c.MaybeValue())
	}
}
