package metadata

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestBrokerPartitionCapacity: a broker's registered PartitionCapacity (its
// file-descriptor budget) bounds the replicas placed on it like a smaller
// max.broker.partitions; a CreateTopics or CreatePartitions beyond it is
// refused whole, names the broker, and commits nothing.
func TestBrokerPartitionCapacity(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfg := testConfig(t.TempDir())
	cfg.MaxBrokerPartitions = 100
	s := openReady(t, cfg)
	for _, reg := range []BrokerRegistration{
		{ID: 1, IncarnationID: "inc-1", PartitionCapacity: 5},
		{ID: 2, IncarnationID: "inc-2"},                          // no capacity reported: max.broker.partitions only
		{ID: 3, IncarnationID: "inc-3", PartitionCapacity: 1000}, // above max.broker.partitions
	} {
		if err := s.RegisterBroker(ctx, reg); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.Image().Brokers[1].PartitionCapacity; got != 5 {
		t.Fatalf("broker 1 capacity in the image: %d, want 5", got)
	}
	on := func(n int32, brokers ...int32) map[int32][]int32 {
		m := map[int32][]int32{}
		for p := range n {
			m[p] = brokers
		}
		return m
	}
	for _, c := range []struct {
		name    string
		spec    TopicSpec
		wantErr string // "" = created
	}{
		{"within broker 1's capacity", TopicSpec{Name: "a", NumPartitions: -1, ReplicationFactor: -1, Assignments: on(4, 1)}, ""},
		{"beyond broker 1's capacity", TopicSpec{Name: "b", NumPartitions: -1, ReplicationFactor: -1, Assignments: on(2, 2, 1)}, "broker 1"},
		{"round robin over all brokers puts too many on broker 1", TopicSpec{Name: "c", NumPartitions: 30, ReplicationFactor: 3}, "broker 1"},
		{"broker 2 bounded by max.broker.partitions", TopicSpec{Name: "d", NumPartitions: -1, ReplicationFactor: -1, Assignments: on(101, 2)}, "max.broker.partitions=100"},
		{"broker 3's capacity above max.broker.partitions", TopicSpec{Name: "e", NumPartitions: -1, ReplicationFactor: -1, Assignments: on(101, 3)}, "max.broker.partitions=100"},
		{"brokers 2 and 3 have room", TopicSpec{Name: "f", NumPartitions: -1, ReplicationFactor: -1, Assignments: on(100, 2, 3)}, ""},
	} {
		err := s.CreateTopics(ctx, []TopicSpec{c.spec}, false)[0]
		_, exists := s.Image().Topics[c.spec.Name]
		if c.wantErr == "" {
			if err != nil || !exists {
				t.Fatalf("%s: %v (exists %v)", c.name, err, exists)
			}
			continue
		}
		if !errors.Is(err, ErrPartitionLimit) || !strings.Contains(err.Error(), c.wantErr) {
			t.Fatalf("%s: %v, want ErrPartitionLimit naming %q", c.name, err, c.wantErr)
		}
		if exists {
			t.Fatalf("%s: refused topic %s exists", c.name, c.spec.Name)
		}
	}
	onOne := [][]int32{{1}, {1}}
	if err := s.CreatePartitions(ctx, "a", 6, onOne, false); !errors.Is(err, ErrPartitionLimit) {
		t.Fatalf("CreatePartitions beyond broker 1's capacity: %v", err)
	}
	if n := len(s.Image().Topics["a"].Partitions); n != 4 {
		t.Fatalf("a has %d partitions after a refused CreatePartitions", n)
	}
	// A restart that reports a larger budget (a raised ulimit) makes room.
	if err := s.RegisterBroker(ctx, BrokerRegistration{ID: 1, IncarnationID: "inc-1b", PartitionCapacity: 50}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreatePartitions(ctx, "a", 6, onOne, false); err != nil {
		t.Fatalf("CreatePartitions after the capacity grew: %v", err)
	}
}
