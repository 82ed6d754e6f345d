package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testutil"
)

// describedBrokerKey is one broker's described value and source of key.
func describedBrokerKey(ctx context.Context, adm *kadm.Client, broker int32, key string) (string, string, []string, error) {
	rcs, err := adm.DescribeBrokerConfigs(ctx, broker)
	if err != nil {
		return "", "", nil, err
	}
	rc, err := rcs.On(strconv.Itoa(int(broker)), nil)
	if err != nil || rc.Err != nil {
		return "", "", nil, fmt.Errorf("describe broker %d: %w %w", broker, err, rc.Err)
	}
	for _, c := range rc.Configs {
		if c.Key == key {
			var syn []string
			for _, s := range c.Synonyms {
				syn = append(syn, s.Source.String())
			}
			return c.MaybeValue(), c.Source.String(), syn, nil
		}
	}
	return "", "", nil, fmt.Errorf("broker %d does not describe %s", broker, key)
}

// Per-broker dynamic configs through kadm on a three-node cluster: a value
// altered on broker 2 only is broker 2's effective value, described there
// as DYNAMIC_BROKER_CONFIG over the cluster default (synonyms in Kafka's
// order) and applied by broker 2 alone (topic defaults, the cleaner);
// broker 1 keeps the cluster default. A request naming another broker, or
// one that does not exist, is INVALID_REQUEST; a static key INVALID_CONFIG;
// the legacy AlterConfigs replaces broker 2's set; deleting returns to the
// cluster default.
func TestPerBrokerDynamicConfigs(t *testing.T) {
	nodes := startQuorum(t, 3, nil, "offsets.topic.replication.factor=1")
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(nodes[0].addr, nodes[1].addr, nodes[2].addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	const key = "log.retention.ms"

	if res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: key, Value: new("2000000")}}); err != nil || res[0].Err != nil {
		t.Fatalf("cluster default: %v %v", err, res)
	}
	res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: key, Value: new("1000000")},
		{Op: kadm.SetConfig, Name: "log.cleaner.threads", Value: new("3")},
	}, 2)
	if err != nil || res[0].Err != nil {
		t.Fatalf("broker 2: %v %+v", err, res)
	}

	type want struct {
		broker        int32
		value, source string
		synonyms      []string
		threads       int
	}
	check := func(ws ...want) {
		t.Helper()
		for _, w := range ws {
			n := nodes[w.broker-1]
			testutil.Eventually(t, 20*time.Second, func() error {
				v, src, syn, err := describedBrokerKey(ctx, adm, w.broker, key)
				if err != nil {
					return err
				}
				if v != w.value || src != w.source || !slices.Equal(syn, w.synonyms) {
					return fmt.Errorf("broker %d: %s=%s from %s, synonyms %v", w.broker, key, v, src, syn)
				}
				if got := n.resolveTopic(nil).RetentionMs; strconv.FormatInt(got, 10) != w.value {
					return fmt.Errorf("broker %d runs topics with retention.ms %d", w.broker, got)
				}
				if got := n.logs.CleanerState().Threads; got != w.threads {
					return fmt.Errorf("broker %d cleaner threads %d", w.broker, got)
				}
				return nil
			}, "broker %d's effective %s", w.broker, key)
		}
	}
	check(
		want{2, "1000000", "DYNAMIC_BROKER_CONFIG", []string{"DYNAMIC_BROKER_CONFIG", "DYNAMIC_DEFAULT_BROKER_CONFIG", "DEFAULT_CONFIG"}, 3},
		want{1, "2000000", "DYNAMIC_DEFAULT_BROKER_CONFIG", []string{"DYNAMIC_DEFAULT_BROKER_CONFIG", "DEFAULT_CONFIG"}, 1},
		want{3, "2000000", "DYNAMIC_DEFAULT_BROKER_CONFIG", []string{"DYNAMIC_DEFAULT_BROKER_CONFIG", "DEFAULT_CONFIG"}, 1},
	)

	// Refusals, sent to broker 1 as raw requests.
	b1 := cl.Broker(1)
	for _, tc := range []struct {
		name, resource, key string
		want                *kerr.Error
	}{
		{"another broker", "2", key, kerr.InvalidRequest},
		{"an unknown broker", "9", key, kerr.InvalidRequest},
		{"not a broker id", "x", key, kerr.InvalidRequest},
		{"a static key", "1", "num.partitions", kerr.InvalidConfig},
		{"an invalid value", "1", "log.cleaner.threads", kerr.InvalidConfig},
	} {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, tc.resource
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = tc.key, kmsg.IncrementalAlterConfigOpSet, new("0")
		r.Configs = append(r.Configs, c)
		req.Resources = append(req.Resources, r)
		resp, err := req.RequestWith(ctx, b1)
		if err != nil {
			t.Fatal(err)
		}
		if got := kerr.ErrorForCode(resp.Resources[0].ErrorCode); !errors.Is(got, tc.want) {
			t.Errorf("%s: %v (%s), want %v", tc.name, got, *resp.Resources[0].ErrorMessage, tc.want)
		}
	}

	// The legacy AlterConfigs replaces broker 2's whole set: the
	// retention value goes, the cleaner threads change.
	res, err = adm.AlterBrokerConfigsState(ctx, []kadm.AlterConfig{{Name: "log.cleaner.threads", Value: new("2")}}, 2)
	if err != nil || res[0].Err != nil {
		t.Fatalf("legacy alter: %v %+v", err, res)
	}
	check(want{2, "2000000", "DYNAMIC_DEFAULT_BROKER_CONFIG", []string{"DYNAMIC_DEFAULT_BROKER_CONFIG", "DEFAULT_CONFIG"}, 2})

	// Deleting broker 2's last value leaves it on the cluster default.
	res, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "log.cleaner.threads"}}, 2)
	if err != nil || res[0].Err != nil {
		t.Fatalf("delete: %v %+v", err, res)
	}
	check(want{2, "2000000", "DYNAMIC_DEFAULT_BROKER_CONFIG", []string{"DYNAMIC_DEFAULT_BROKER_CONFIG", "DEFAULT_CONFIG"}, 1})
	testutil.Eventually(t, 10*time.Second, func() error {
		if img := nodes[0].store.Image(); len(img.BrokerConfigs) != 0 {
			return fmt.Errorf("per-broker configs left: %v", img.BrokerConfigs)
		}
		return nil
	}, "broker 2's emptied set removed from the image")
}

// unregisterBroker sends UnregisterBroker for id to broker via and returns
// the error code it answers.
func unregisterBroker(ctx context.Context, t *testing.T, via *kgo.Broker, id int32) error {
	t.Helper()
	req := kmsg.NewPtrUnregisterBrokerRequest()
	req.BrokerID = id
	resp, err := req.RequestWith(ctx, via)
	if err != nil {
		t.Fatal(err)
	}
	return kerr.ErrorForCode(resp.ErrorCode)
}

// describedBrokers lists the broker ids DescribeCluster v2 answers,
// fenced ones included.
func describedBrokers(ctx context.Context, cl *kgo.Client) ([]int32, error) {
	req := kmsg.NewPtrDescribeClusterRequest()
	req.Version = 2
	req.IncludeFencedBrokers = true
	resp, err := req.RequestWith(ctx, cl.Broker(1))
	if err != nil {
		return nil, err
	}
	var ids []int32
	for _, b := range resp.Brokers {
		ids = append(ids, b.NodeID)
	}
	slices.Sort(ids)
	return ids, nil
}

// UnregisterBroker on a three-node cluster: a live broker is refused with
// INVALID_REQUEST and an unknown id with BROKER_ID_NOT_REGISTERED; once
// broker 3 is stopped (fenced by its controlled shutdown) it is
// unregistered, disappears from DescribeCluster (even with fenced brokers
// included) and from kadm's broker metadata on every broker, while the
// partition that lists it as a replica keeps it listed; unregistering it
// again is BROKER_ID_NOT_REGISTERED; the node started again registers as
// a new broker.
func TestUnregisterBroker(t *testing.T) {
	nodes := startQuorum(t, 3, nil, "offsets.topic.replication.factor=1")
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(nodes[0].addr, nodes[1].addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	createPartitionOn(ctx, t, cl, "on-three", 3, 1)

	if err := unregisterBroker(ctx, t, cl.Broker(1), 3); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("live broker 3: %v, want INVALID_REQUEST", err)
	}
	if err := unregisterBroker(ctx, t, cl.Broker(2), 9); !errors.Is(err, kerr.BrokerIDNotRegistered) {
		t.Fatalf("unknown broker 9: %v, want BROKER_ID_NOT_REGISTERED", err)
	}
	if _, ok := nodes[0].store.Image().Brokers[3]; !ok {
		t.Fatal("the refused request unregistered broker 3")
	}

	nodes[2].stop(t)
	testutil.Eventually(t, 20*time.Second, func() error {
		ids, err := describedBrokers(ctx, cl)
		if err != nil {
			return err
		}
		if b, ok := nodes[0].store.Image().Brokers[3]; !ok || !b.Fenced || !slices.Equal(ids, []int32{1, 2, 3}) {
			return fmt.Errorf("broker 3 not yet fenced; DescribeCluster lists %v", ids)
		}
		return nil
	}, "stopped broker 3 fenced and still described")

	oldEpoch := nodes[0].store.Image().Brokers[3].Epoch
	if err := unregisterBroker(ctx, t, cl.Broker(2), 3); err != nil {
		t.Fatalf("unregister stopped broker 3: %v", err)
	}
	for _, n := range nodes[:2] {
		testutil.Eventually(t, 10*time.Second, func() error {
			if _, ok := n.store.Image().Brokers[3]; ok {
				return fmt.Errorf("broker %d still has broker 3", n.cfg.NodeID)
			}
			return nil
		}, "broker 3 gone from every image")
	}
	ids, err := describedBrokers(ctx, cl)
	if err != nil || !slices.Equal(ids, []int32{1, 2}) {
		t.Fatalf("DescribeCluster after unregistering: %v %v", ids, err)
	}
	// A fresh client: kadm answers BrokerMetadata from kgo's metadata
	// cache, which may predate the unregistration.
	fresh, err := kgo.NewClient(kgo.SeedBrokers(nodes[1].addr))
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	fadm := kadm.NewClient(fresh)
	md, err := fadm.BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := md.Brokers.NodeIDs(); !slices.Equal(got, []int32{1, 2}) {
		t.Fatalf("kadm broker metadata lists %v", got)
	}
	tmd, err := fadm.Metadata(ctx, "on-three")
	if err != nil {
		t.Fatal(err)
	}
	if p := tmd.Topics["on-three"].Partitions[0]; !slices.Equal(p.Replicas, []int32{3, 1}) {
		t.Fatalf("on-three replicas %v, want [3 1] (kept, as Kafka)", p.Replicas)
	}
	if err := unregisterBroker(ctx, t, cl.Broker(1), 3); !errors.Is(err, kerr.BrokerIDNotRegistered) {
		t.Fatalf("unregistering again: %v, want BROKER_ID_NOT_REGISTERED", err)
	}

	// The same node id started again registers as a new broker.
	restartNode(t, nodes[2])
	testutil.Eventually(t, 20*time.Second, func() error {
		b, ok := nodes[0].store.Image().Brokers[3]
		if !ok || b.Fenced || b.Epoch <= oldEpoch {
			return fmt.Errorf("broker 3 after its restart: %+v", b)
		}
		ids, err := describedBrokers(ctx, cl)
		if err != nil || !slices.Equal(ids, []int32{1, 2, 3}) {
			return fmt.Errorf("DescribeCluster lists %v (%w)", ids, err)
		}
		return nil
	}, "broker 3 registered again after its restart")
}

// restartNode starts a stopped node again with its config (same node id,
// controller address and log directories).
func restartNode(t *testing.T, tn *testNode) {
	t.Helper()
	node, err := NewNode(tn.cfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tn.Node, tn.cancel, tn.done = node, cancel, make(chan error, 1)
	go func() { tn.done <- node.Run(ctx) }()
	select {
	case <-node.Ready():
	case err := <-tn.done:
		t.Fatalf("node exited before ready: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("node not ready after 30s")
	}
	tn.addr, _ = node.Addr("PLAINTEXT")
}
