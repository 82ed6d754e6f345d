package metadata

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/kbroker/kbroker/metadata/decisions"
)

func TestPlanReassignment(t *testing.T) {
	type state struct {
		replicas, isr, adding, removing []int32
		leader                          int32
	}
	for _, tc := range []struct {
		name    string
		from    state
		target  []int32 // nil: cancel
		alive   []int32
		want    state
		wantErr error
	}{
		{"move one replica: adding first", state{replicas: []int32{1, 2}, isr: []int32{1, 2}, leader: 1},
			[]int32{2, 3}, []int32{1, 2, 3},
			state{replicas: []int32{2, 3, 1}, isr: []int32{1, 2}, adding: []int32{3}, removing: []int32{1}, leader: 1}, nil},
		{"pure removal of an in-sync replica completes at once", state{replicas: []int32{1, 2, 3}, isr: []int32{1, 2, 3}, leader: 1},
			[]int32{2, 3}, []int32{1, 2, 3},
			state{replicas: []int32{2, 3}, isr: []int32{2, 3}, leader: 2}, nil},
		{"reorder only", state{replicas: []int32{1, 2}, isr: []int32{1, 2}, leader: 1},
			[]int32{2, 1}, []int32{1, 2},
			state{replicas: []int32{2, 1}, isr: []int32{1, 2}, leader: 1}, nil},
		{"removal waits for the target to be in sync", state{replicas: []int32{1, 2, 3}, isr: []int32{1, 2}, leader: 1},
			[]int32{2, 3}, []int32{1, 2, 3},
			state{replicas: []int32{2, 3, 1}, isr: []int32{1, 2}, removing: []int32{1}, leader: 1}, nil},
		{"cancel", state{replicas: []int32{2, 3, 1}, isr: []int32{1, 2, 3}, adding: []int32{3}, removing: []int32{1}, leader: 3},
			nil, []int32{1, 2, 3},
			state{replicas: []int32{2, 1}, isr: []int32{1, 2}, leader: 2}, nil},
		{"cancel without a reassignment", state{replicas: []int32{1}, isr: []int32{1}, leader: 1},
			nil, []int32{1}, state{}, ErrNoReassignmentInProgress},
		{"replace: in-flight adding replica leaves", state{replicas: []int32{2, 3, 1}, isr: []int32{1, 2, 3}, adding: []int32{3}, removing: []int32{1}, leader: 1},
			[]int32{2, 4}, []int32{1, 2, 3, 4},
			state{replicas: []int32{2, 4, 1}, isr: []int32{1, 2}, adding: []int32{4}, removing: []int32{1}, leader: 1}, nil},
		{"cancel that would empty the ISR", state{replicas: []int32{3, 1}, isr: []int32{3}, adding: []int32{3}, removing: []int32{1}, leader: 3},
			nil, []int32{1, 3}, state{}, ErrInvalidReplicaAssignment},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Partition{Replicas: tc.from.replicas, ISR: tc.from.isr, AddingReplicas: tc.from.adding,
				RemovingReplicas: tc.from.removing, Leader: tc.from.leader, LeaderEpoch: 5, PartitionEpoch: 9}
			orig := *p
			got, err := decisions.PlanReassignment(p, tc.target, aliveSet(tc.alive...))
			if !slices.Equal(p.Replicas, orig.Replicas) || !slices.Equal(p.ISR, orig.ISR) {
				t.Fatal("input modified")
			}
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			w := tc.want
			if !slices.Equal(got.Replicas, w.replicas) || !slices.Equal(got.ISR, w.isr) || !slices.Equal(got.AddingReplicas, w.adding) ||
				!slices.Equal(got.RemovingReplicas, w.removing) || got.Leader != w.leader {
				t.Fatalf("got replicas %v ISR %v adding %v removing %v leader %d, want %+v",
					got.Replicas, got.ISR, got.AddingReplicas, got.RemovingReplicas, got.Leader, w)
			}
			if got.PartitionEpoch != 10 || (got.Leader != p.Leader) != (got.LeaderEpoch > 5) {
				t.Fatalf("epochs %d/%d (leader %d -> %d)", got.LeaderEpoch, got.PartitionEpoch, p.Leader, got.Leader)
			}
		})
	}
}

// The ISR expansion that brings the last target replica in sync completes
// the reassignment; one that does not leaves it in progress.
func TestCompleteReassignment(t *testing.T) {
	p := &Partition{Replicas: []int32{2, 3, 1}, ISR: []int32{1, 2}, AddingReplicas: []int32{3}, RemovingReplicas: []int32{1}, Leader: 1, LeaderEpoch: 4}
	if got := decisions.CompleteReassignment(p, aliveSet(1, 2, 3)); got != p {
		t.Fatalf("completed with 3 out of sync: %+v", got)
	}
	p.ISR = []int32{1, 2, 3}
	got := decisions.CompleteReassignment(p, aliveSet(1, 2, 3))
	if !slices.Equal(got.Replicas, []int32{2, 3}) || !slices.Equal(got.ISR, []int32{2, 3}) || got.Leader != 2 || got.LeaderEpoch != 5 || got.Reassigning() {
		t.Fatalf("completed: %+v", got)
	}
	if got := decisions.CompleteReassignment(p, aliveSet(1)); got != p {
		t.Fatalf("completed with no alive target replica to lead: %+v", got)
	}
}

// A snapshot keeps a reassignment in progress.
func TestSnapshotKeepsReassignment(t *testing.T) {
	img := emptyImage()
	img.withTopic(&Topic{Name: "m", ID: [16]byte{1}, Partitions: []*Partition{{
		Replicas: []int32{2, 1}, ISR: []int32{1}, Leader: 1, AddingReplicas: []int32{2}, RemovingReplicas: []int32{1},
	}}})
	var buf bytes.Buffer
	if err := writeSnapshot(&buf, img); err != nil {
		t.Fatal(err)
	}
	got, err := readSnapshot(&buf)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := got.Partition("m", 0)
	if !slices.Equal(p.AddingReplicas, []int32{2}) || !slices.Equal(p.RemovingReplicas, []int32{1}) {
		t.Fatalf("restored %+v", p)
	}
}
