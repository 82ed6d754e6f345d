package metadata

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestPartitionLimits: CreateTopics and CreatePartitions beyond
// max.partitions or max.broker.partitions fail with ErrPartitionLimit and
// create nothing of the refused topic; the FSM checks the limits a record
// carries again.
func TestPartitionLimits(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfg := testConfig(t.TempDir())
	cfg.MaxPartitions = 10
	cfg.MaxBrokerPartitions = 6
	s := openReady(t, cfg)
	for _, id := range []int32{1, 2, 3} {
		if err := s.RegisterBroker(ctx, BrokerRegistration{ID: id, IncarnationID: fmt.Sprint("inc-", id)}); err != nil {
			t.Fatal(err)
		}
	}
	on := func(brokers ...int32) map[int32][]int32 { return map[int32][]int32{0: brokers} }
	spread := func(n int32, brokers ...int32) map[int32][]int32 {
		m := map[int32][]int32{}
		for p := range n {
			m[p] = brokers
		}
		return m
	}
	type step struct {
		name  string
		specs []TopicSpec
		want  []error // per spec
	}
	for _, st := range []step{
		{"4 partitions, 4 replicas on each broker", []TopicSpec{{Name: "a", NumPartitions: 4, ReplicationFactor: 3}}, []error{nil}},
		{"b fills every broker to 6; c, later in the same request, would put a 7th on broker 1",
			[]TopicSpec{
				{Name: "b", NumPartitions: 2, ReplicationFactor: 3},
				{Name: "c", NumPartitions: -1, ReplicationFactor: -1, Assignments: on(1)},
			}, []error{nil, ErrPartitionLimit}},
		{"max.broker.partitions counts each replica", []TopicSpec{{Name: "d", NumPartitions: 1, ReplicationFactor: 1}}, []error{ErrPartitionLimit}},
	} {
		errs := s.CreateTopics(ctx, st.specs, false)
		for i, want := range st.want {
			if !errors.Is(errs[i], want) || (want == nil) != (errs[i] == nil) {
				t.Fatalf("%s: %s: %v, want %v", st.name, st.specs[i].Name, errs[i], want)
			}
		}
	}
	img := s.Image()
	for _, name := range []string{"c", "d"} {
		if _, ok := img.Topics[name]; ok {
			t.Fatalf("refused topic %s exists", name)
		}
	}

	// CreatePartitions: 2 more partitions of a would put 8 replicas on
	// each broker.
	if err := s.CreatePartitions(ctx, "a", 6, nil, false); !errors.Is(err, ErrPartitionLimit) {
		t.Fatalf("create partitions beyond max.broker.partitions: %v", err)
	}
	if n := len(s.Image().Topics["a"].Partitions); n != 4 {
		t.Fatalf("a has %d partitions after a refused CreatePartitions", n)
	}

	// max.partitions: 6 partitions exist; with room per broker (limit
	// raised), 5 more exceed the cluster's 10.
	cfg.MaxBrokerPartitions = 1000
	s.Close()
	s = openReady(t, cfg)
	if errs := s.CreateTopics(ctx, []TopicSpec{{Name: "e", NumPartitions: -1, ReplicationFactor: -1, Assignments: spread(5, 1)}}, false); !errors.Is(errs[0], ErrPartitionLimit) {
		t.Fatalf("create beyond max.partitions: %v", errs[0])
	}
	if errs := s.CreateTopics(ctx, []TopicSpec{{Name: "e", NumPartitions: -1, ReplicationFactor: -1, Assignments: spread(4, 1)}}, false); errs[0] != nil {
		t.Fatalf("create up to max.partitions: %v", errs[0])
	}

	// The FSM re-checks: a record planned against an older image (as a
	// concurrent request would be) is rejected.
	_, err := s.propose(ctx, recCreateTopic, &createTopicRecord{
		Name: "late", TopicID: randomUUID(s.Image()),
		Partitions: []partitionRecord{{Partition: 0, Replicas: []int32{2}, ISR: []int32{2}, Leader: 2}},
		Limits:     s.limits(),
	})
	if !errors.Is(err, ErrPartitionLimit) {
		t.Fatalf("FSM took a record beyond max.partitions: %v", err)
	}
	if _, ok := s.Image().Topics["late"]; ok {
		t.Fatal("late exists")
	}
}
