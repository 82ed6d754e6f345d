package decisions

import "slices"

// Partition is the replica set, leader and ISR of one partition.
//
// LeaderEpoch is bumped on every leader change; PartitionEpoch on every
// change of the partition (leader or ISR), and a change proposed against an
// older PartitionEpoch is rejected.
type Partition struct {
	ID             int32
	Replicas, ISR  []int32
	Leader         int32 // NoLeader if none
	LeaderEpoch    int32
	PartitionEpoch int32
	// A reassignment in progress: the replicas being added
	// and those being removed once the target is in the ISR.
	AddingReplicas   []int32 `json:",omitempty"`
	RemovingReplicas []int32 `json:",omitempty"`
}

// NoLeader is the Leader of a partition without one.
const NoLeader int32 = -1

// Reassigning reports whether a reassignment of p is in progress.
func (p *Partition) Reassigning() bool {
	return len(p.AddingReplicas) > 0 || len(p.RemovingReplicas) > 0
}

// ReassignmentTarget is the replica set p is being reassigned to (its
// replicas when none is in progress).
func (p *Partition) ReassignmentTarget() []int32 {
	return Without(p.Replicas, p.RemovingReplicas)
}

// Without returns the ids of a not in b, in a's order.
func Without(a, b []int32) []int32 {
	out := make([]int32, 0, len(a))
	for _, id := range a {
		if !slices.Contains(b, id) {
			out = append(out, id)
		}
	}
	return out
}
