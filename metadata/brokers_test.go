package metadata

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/testutil"
)

// TestFSMUnregisterBroker: an UnregisterBroker record removes a fenced
// broker at its current epoch and nothing else; an unknown, unfenced or
// stale one is rejected; partitions keep listing the broker; a process
// with the same id registers anew afterwards.
func TestFSMUnregisterBroker(t *testing.T) {
	img := emptyImage()
	var index uint64
	apply := func(typ recordType, payload any) error {
		t.Helper()
		index++
		var res any
		img, res = applyEntry(img, index, mustEncode(t, typ, payload))
		err, _ := res.(error)
		return err
	}
	for id := int32(1); id <= 3; id++ {
		if err := apply(recRegisterBroker, &registerBrokerRecord{BrokerID: id, IncarnationID: "a"}); err != nil {
			t.Fatal(err)
		}
	}
	tid := [16]byte{1}
	if err := apply(recCreateTopic, &createTopicRecord{Name: "t", TopicID: tid, Partitions: []partitionRecord{
		{Partition: 0, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1},
		{Partition: 1, Replicas: []int32{3}, ISR: []int32{3}, Leader: 3},
	}}); err != nil {
		t.Fatal(err)
	}
	epoch3 := img.Brokers[3].Epoch

	cases := []struct {
		name string
		rec  unregisterBrokerRecord
		want error
	}{
		{"unknown id", unregisterBrokerRecord{BrokerID: 9, BrokerEpoch: 1}, ErrBrokerNotRegistered},
		{"unfenced", unregisterBrokerRecord{BrokerID: 3, BrokerEpoch: epoch3}, ErrBrokerAlive},
	}
	for _, c := range cases {
		before := img
		if err := apply(recUnregisterBroker, &c.rec); !errors.Is(err, c.want) {
			t.Fatalf("%s: got %v, want %v", c.name, err, c.want)
		}
		if !reflect.DeepEqual(before.Brokers, img.Brokers) {
			t.Fatalf("%s: a rejected record changed the brokers", c.name)
		}
	}

	if err := apply(recFenceBroker, &fenceBrokerRecord{BrokerID: 3, BrokerEpoch: epoch3}); err != nil {
		t.Fatal(err)
	}
	if err := apply(recUnregisterBroker, &unregisterBrokerRecord{BrokerID: 3, BrokerEpoch: epoch3 - 1}); !errors.Is(err, ErrStaleBrokerEpoch) {
		t.Fatalf("stale epoch: got %v", err)
	}
	before := img
	if err := apply(recUnregisterBroker, &unregisterBrokerRecord{BrokerID: 3, BrokerEpoch: epoch3}); err != nil {
		t.Fatalf("fenced broker: %v", err)
	}
	if _, ok := img.Brokers[3]; ok {
		t.Fatal("broker 3 still registered")
	}
	if _, ok := before.Brokers[3]; !ok {
		t.Fatal("unregistering modified the previous image")
	}
	if got := img.UnfencedBrokerIDs(); !slices.Equal(got, []int32{1, 2}) {
		t.Fatalf("unfenced brokers %v", got)
	}
	p0, _ := img.Partition("t", 0)
	p1, _ := img.Partition("t", 1)
	if !slices.Equal(p0.Replicas, []int32{1, 2, 3}) || !slices.Equal(p1.Replicas, []int32{3}) {
		t.Fatalf("replicas changed: %v %v", p0.Replicas, p1.Replicas)
	}
	if p1.Leader != NoLeader || !slices.Equal(p1.ISR, []int32{3}) {
		t.Fatalf("partition 1 of the gone broker: leader %d ISR %v, want offline with ISR [3]", p1.Leader, p1.ISR)
	}
	// Placement no longer considers it.
	pl := planner{img: img, partitions: 1, rf: 3}
	if _, err := pl.plan(TopicSpec{Name: "u", NumPartitions: 1, ReplicationFactor: 3}, [16]byte{2}, 0); !errors.Is(err, ErrInvalidReplicationFactor) {
		t.Fatalf("rf 3 over two brokers: %v", err)
	}

	// The same id comes back as a new registration, unfenced, and leads
	// its offline partition again.
	if err := apply(recRegisterBroker, &registerBrokerRecord{BrokerID: 3, IncarnationID: "b"}); err != nil {
		t.Fatal(err)
	}
	b := img.Brokers[3]
	if b == nil || b.Fenced || b.Epoch != int64(index) {
		t.Fatalf("re-registered broker %+v", b)
	}
	if p1, _ = img.Partition("t", 1); p1.Leader != 3 {
		t.Fatalf("partition 1 leader %d after re-registration", p1.Leader)
	}
}

// TestFSMBrokerConfigs: per-broker values are set and removed per broker
// id, an emptied broker disappears from the map, snapshots keep them, and
// DynamicBrokerConfigs layers them over the cluster-wide defaults for
// that broker only.
func TestFSMBrokerConfigs(t *testing.T) {
	img := emptyImage()
	var index uint64
	apply := func(typ recordType, payload any) {
		t.Helper()
		index++
		var res any
		img, res = applyEntry(img, index, mustEncode(t, typ, payload))
		if err, _ := res.(error); err != nil {
			t.Fatal(err)
		}
	}
	apply(recConfigChange, &configChangeRecord{Cluster: true, Set: map[string]string{"log.retention.ms": "1000", "log.cleaner.threads": "2"}})
	apply(recBrokerConfigChange, &brokerConfigChangeRecord{BrokerID: 2, Set: map[string]string{"log.retention.ms": "2000", "leader.replication.throttled.rate": "10"}})

	cases := []struct {
		broker int32
		want   map[string]string
	}{
		{1, map[string]string{"log.retention.ms": "1000", "log.cleaner.threads": "2"}},
		{2, map[string]string{"log.retention.ms": "2000", "log.cleaner.threads": "2", "leader.replication.throttled.rate": "10"}},
		{7, map[string]string{"log.retention.ms": "1000", "log.cleaner.threads": "2"}},
	}
	for _, c := range cases {
		if got := img.DynamicBrokerConfigs(c.broker); !maps.Equal(got, c.want) {
			t.Errorf("broker %d: %v, want %v", c.broker, got, c.want)
		}
	}
	if img.ClusterConfigs["log.retention.ms"] != "1000" {
		t.Fatal("DynamicBrokerConfigs modified the cluster defaults")
	}

	var buf bytes.Buffer
	if err := writeSnapshot(&buf, img); err != nil {
		t.Fatal(err)
	}
	f := newTestFSM()
	if err := f.Restore(io.NopCloser(&buf)); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.image().BrokerConfigs, img.BrokerConfigs) {
		t.Fatalf("restored %v, want %v", f.image().BrokerConfigs, img.BrokerConfigs)
	}

	prev := img
	apply(recBrokerConfigChange, &brokerConfigChangeRecord{BrokerID: 2, Remove: []string{"log.retention.ms", "leader.replication.throttled.rate"}})
	if _, ok := img.BrokerConfigs[2]; ok {
		t.Fatalf("emptied broker kept: %v", img.BrokerConfigs)
	}
	if prev.BrokerConfigs[2]["log.retention.ms"] != "2000" {
		t.Fatal("the change modified the previous image")
	}
}

// TestClusterUnregisterBroker: UnregisterBroker called on a node that is
// not the controller, with the refusals crossing the controller RPC as
// their sentinels, and per-broker configs validated like the cluster
// defaults.
func TestClusterUnregisterBroker(t *testing.T) {
	c := newTestCluster(t, 3, func(cfg *Config) {
		cfg.ValidateClusterConfig = func(m map[string]string) error {
			for k := range m {
				if k != "log.retention.ms" {
					return errors.New(k + " is not dynamic")
				}
			}
			return nil
		}
	})
	c.ready()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	via := c.follower()
	c.registerBrokers(ctx, via, 1, 2, 3)

	if err := via.UnregisterBroker(ctx, 9); !errors.Is(err, ErrBrokerNotRegistered) {
		t.Fatalf("unknown broker: %v", err)
	}
	if err := via.UnregisterBroker(ctx, 2); !errors.Is(err, ErrBrokerAlive) {
		t.Fatalf("live broker: %v", err)
	}
	b2 := c.leader().Image().Brokers[2]
	if err := via.FenceBroker(ctx, 2, b2.Epoch); err != nil {
		t.Fatal(err)
	}
	if err := via.UnregisterBroker(ctx, 2); err != nil {
		t.Fatalf("fenced broker: %v", err)
	}
	img := c.converged()
	if _, ok := img.Brokers[2]; ok || len(img.Brokers) != 2 {
		t.Fatalf("brokers after unregistering 2: %v", slices.Sorted(maps.Keys(img.Brokers)))
	}

	if err := via.AlterBrokerConfigs(ctx, 1, map[string]string{"log.cleaner.threads": "3"}, nil); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("invalid per-broker key: %v", err)
	}
	if err := via.AlterBrokerConfigs(ctx, 1, map[string]string{"log.retention.ms": "5"}, nil); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		for id, s := range c.stores {
			if got := s.Image().DynamicBrokerConfigs(1)["log.retention.ms"]; got != "5" {
				return fmt.Errorf("node %d has %q", id, got)
			}
		}
		return nil
	}, "per-broker value on every node")
}
