package decisions

import (
	"errors"
	"fmt"
	"slices"
)

// The per-partition errors of a partition change (AlterPartition); package
// metadata aliases them.
var (
	// ErrStalePartitionEpoch: a change based on an older partition epoch.
	// Kafka: INVALID_UPDATE_VERSION.
	ErrStalePartitionEpoch = errors.New("metadata: stale partition epoch")
	// ErrFencedLeaderEpoch: a change based on an older leader epoch. Kafka:
	// FENCED_LEADER_EPOCH.
	ErrFencedLeaderEpoch = errors.New("metadata: fenced leader epoch")
	// ErrInvalidPartitionChange: a leader or ISR that is not valid for the
	// partition. Kafka: INVALID_REQUEST, INELIGIBLE_REPLICA.
	ErrInvalidPartitionChange = errors.New("metadata: invalid partition change")
)

// Change is a new leader and ISR for a partition, decided on its leader
// epoch and partition epoch.
type Change struct {
	Leader                      int32
	ISR                         []int32
	LeaderEpoch, PartitionEpoch int32
}

// ChangePartition is Kafka's AlterPartition check of one partition: c must
// be based on cur's epochs, its ISR a set of cur's replicas holding the
// leader (or NoLeader), and a replica may join the ISR only while its
// broker is registered and unfenced (KIP-841: a broker in controlled
// shutdown may still fetch for a moment, and must not count towards
// min.insync.replicas). It returns cur with the new leader and ISR, the
// partition epoch bumped and the leader epoch bumped when the leader
// changes.
func ChangePartition(cur *Partition, c Change, unfenced func(int32) bool) (*Partition, error) {
	if c.PartitionEpoch != cur.PartitionEpoch {
		return nil, fmt.Errorf("%w: at partition epoch %d, change is based on %d",
			ErrStalePartitionEpoch, cur.PartitionEpoch, c.PartitionEpoch)
	}
	if c.LeaderEpoch != cur.LeaderEpoch {
		return nil, fmt.Errorf("%w: at leader epoch %d, change is based on %d",
			ErrFencedLeaderEpoch, cur.LeaderEpoch, c.LeaderEpoch)
	}
	if err := CheckISR(cur.Replicas, c.Leader, c.ISR); err != nil {
		return nil, err
	}
	for _, id := range c.ISR {
		if !slices.Contains(cur.ISR, id) && !unfenced(id) {
			return nil, fmt.Errorf("%w: broker %d is fenced and cannot join the ISR", ErrInvalidPartitionChange, id)
		}
	}
	p := &Partition{
		ID:             cur.ID,
		Replicas:       cur.Replicas,
		ISR:            slices.Clone(c.ISR),
		Leader:         c.Leader,
		LeaderEpoch:    cur.LeaderEpoch,
		PartitionEpoch: cur.PartitionEpoch + 1,
	}
	if p.Leader != cur.Leader {
		p.LeaderEpoch++
	}
	return p, nil
}

// CheckISR checks that isr is a non-empty set of replicas and that leader
// is NoLeader or in it.
func CheckISR(replicas []int32, leader int32, isr []int32) error {
	if len(isr) == 0 {
		return fmt.Errorf("%w: empty ISR", ErrInvalidPartitionChange)
	}
	for i, id := range isr {
		if !slices.Contains(replicas, id) || slices.Contains(isr[:i], id) {
			return fmt.Errorf("%w: ISR %v is not a set of replicas %v", ErrInvalidPartitionChange, isr, replicas)
		}
	}
	if leader != NoLeader && !slices.Contains(isr, leader) {
		return fmt.Errorf("%w: leader %d not in ISR %v", ErrInvalidPartitionChange, leader, isr)
	}
	return nil
}

// CheckAssignment validates an explicit replica assignment (partition ->
// brokers): partitions 0..n-1 present, each with the same number (>= 1) of
// distinct registered brokers, at least one of them alive. It returns the
// assignment as a slice indexed by partition.
func CheckAssignment(a map[int32][]int32, registered, alive func(int32) bool) ([][]int32, error) {
	if len(a) == 0 {
		return nil, fmt.Errorf("%w: empty assignment", ErrInvalidReplicaAssignment)
	}
	out := make([][]int32, len(a))
	for p := range out {
		replicas, ok := a[int32(p)]
		switch {
		case !ok:
			return nil, fmt.Errorf("%w: partitions must be numbered 0..%d, %d is missing", ErrInvalidReplicaAssignment, len(a)-1, p)
		case len(replicas) == 0:
			return nil, fmt.Errorf("%w: partition %d has no replicas", ErrInvalidReplicaAssignment, p)
		case len(replicas) != len(out[0]) && p > 0:
			return nil, fmt.Errorf("%w: partition %d has %d replicas, partition 0 has %d", ErrInvalidReplicaAssignment, p, len(replicas), len(out[0]))
		case FirstAlive(replicas, alive) == NoLeader:
			return nil, fmt.Errorf("%w: partition %d has no unfenced replica", ErrInvalidReplicaAssignment, p)
		}
		for i, id := range replicas {
			if !registered(id) {
				return nil, fmt.Errorf("%w: partition %d: broker %d is not registered", ErrInvalidReplicaAssignment, p, id)
			}
			if slices.Contains(replicas[:i], id) {
				return nil, fmt.Errorf("%w: partition %d: broker %d listed twice", ErrInvalidReplicaAssignment, p, id)
			}
		}
		out[p] = slices.Clone(replicas)
	}
	return out, nil
}

// FirstAlive returns the first alive replica, or NoLeader: the leader of a
// new partition.
func FirstAlive(replicas []int32, alive func(int32) bool) int32 {
	for _, id := range replicas {
		if alive(id) {
			return id
		}
	}
	return NoLeader
}

// CheckSender is AlterPartition's check of who sends a change of cur based
// on leaderEpoch: a deposed leader is fenced, and only the leader may
// change the ISR (Kafka: INVALID_REQUEST).
func CheckSender(cur *Partition, broker, leaderEpoch int32) error {
	if leaderEpoch != cur.LeaderEpoch {
		return fmt.Errorf("%w: at leader epoch %d, change is based on %d", ErrFencedLeaderEpoch, cur.LeaderEpoch, leaderEpoch)
	}
	if cur.Leader != broker {
		return fmt.Errorf("%w: broker %d is not the leader", ErrInvalidPartitionChange, broker)
	}
	return nil
}
