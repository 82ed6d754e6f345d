package metadata

import (
	"context"
	"errors"
	"fmt"
	"github.com/kbroker/kbroker/internal/testutil"
	"slices"
	"testing"
	"time"
)

// A reassignment started through one controller survives its failover:
// the next controller's image holds it, and the leader's ISR expansion
// applied there completes it (the removed replica leaves only then).
// Cancelling with nothing in progress is ErrNoReassignmentInProgress
// across the controller RPC.
func TestClusterReassignmentSurvivesFailover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := newTestCluster(t, 3, nil)
	c.converged()
	c.registerBrokers(ctx, c.follower(), 1, 2)
	if errs := c.follower().CreateTopics(ctx, []TopicSpec{{Name: "m", NumPartitions: -1, ReplicationFactor: -1,
		Assignments: map[int32][]int32{0: {1}}}}, false); errs[0] != nil {
		t.Fatal(errs[0])
	}
	if errs := c.follower().AlterPartitionReassignments(ctx, []Reassignment{{Topic: "m", Partition: 0, Replicas: []int32{2}}}, false); errs[0] != nil {
		t.Fatal(errs[0])
	}
	img := c.converged()
	if p, _ := img.Partition("m", 0); !slices.Equal(p.Replicas, []int32{2, 1}) || !slices.Equal(p.AddingReplicas, []int32{2}) ||
		!slices.Equal(p.RemovingReplicas, []int32{1}) || !slices.Equal(p.ISR, []int32{1}) || p.Leader != 1 {
		t.Fatalf("in progress: %+v", p)
	}

	old := c.leader()
	c.close(old.cfg.NodeID)
	l := c.leader()
	p, _ := l.Image().Partition("m", 0)
	if !p.Reassigning() {
		t.Fatalf("the new controller lost the reassignment: %+v", p)
	}
	// Broker 1, the leader, reports broker 2 caught up.
	if err := l.ChangePartition(ctx, PartitionChange{Topic: "m", Partition: 0, Leader: 1, ISR: []int32{1, 2},
		LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		p, _ := l.Image().Partition("m", 0)
		if !slices.Equal(p.Replicas, []int32{2}) || !slices.Equal(p.ISR, []int32{2}) || p.Leader != 2 || p.Reassigning() {
			return fmt.Errorf("partition %+v", p)
		}
		return nil
	}, "the reassignment completes")
	var f *Store
	for _, s := range c.stores {
		if s != l {
			f = s
		}
	}
	errs := f.AlterPartitionReassignments(ctx, []Reassignment{{Topic: "m", Partition: 0, Cancel: true}, {Topic: "m", Partition: 0, Replicas: []int32{2, 1}}}, false)
	if !errors.Is(errs[0], ErrNoReassignmentInProgress) || !errors.Is(errs[1], ErrInvalidReplicationFactor) {
		t.Fatalf("errors %v", errs)
	}
}
