package decisions

import (
	"errors"
	"fmt"
	"slices"
)

var (
	// ErrInvalidReplicaAssignment: Kafka INVALID_REPLICA_ASSIGNMENT.
	ErrInvalidReplicaAssignment = errors.New("metadata: invalid replica assignment")
	// ErrNoReassignmentInProgress: cancelling a reassignment of a
	// partition that has none. Kafka: NO_REASSIGNMENT_IN_PROGRESS.
	ErrNoReassignmentInProgress = errors.New("metadata: no reassignment in progress")
)

// ElectLeader returns the first replica, in assignment order, that is in
// the ISR and alive; if there is none and unclean election is allowed, the
// first alive replica; else NoLeader.
func ElectLeader(p *Partition, alive func(int32) bool, unclean bool) int32 {
	for _, id := range p.Replicas {
		if alive(id) && slices.Contains(p.ISR, id) {
			return id
		}
	}
	if unclean {
		for _, id := range p.Replicas {
			if alive(id) {
				return id
			}
		}
	}
	return NoLeader
}

// WithLeaderAndISR returns a copy of p with a new leader and ISR and the
// epochs bumped as a PartitionChange would: the partition epoch always, the
// leader epoch when the leader changes.
func WithLeaderAndISR(p *Partition, leader int32, isr []int32) *Partition {
	n := *p
	n.ISR = isr
	n.Leader = leader
	n.PartitionEpoch++
	if leader != p.Leader {
		n.LeaderEpoch++
	}
	return &n
}

// Fence decides what becomes of p when broker is fenced. alive
// already reports broker as dead. The broker leaves the ISR unless it is
// its last member (Kafka keeps the last one, so that the partition knows
// which replica holds every acknowledged write). If it was the leader, a
// new leader is elected from the remaining ISR; with unclean election
// allowed and no alive ISR member, the first alive replica becomes leader
// with an ISR of itself; otherwise the partition goes offline (NoLeader).
// It returns nil when p does not change.
func Fence(p *Partition, broker int32, alive func(int32) bool, unclean bool) *Partition {
	inISR := slices.Contains(p.ISR, broker)
	if !inISR && p.Leader != broker {
		return nil
	}
	isr := p.ISR
	if inISR && len(p.ISR) > 1 {
		isr = slices.DeleteFunc(slices.Clone(p.ISR), func(id int32) bool { return id == broker })
	}
	leader := p.Leader
	if leader == broker {
		leader = ElectLeader(&Partition{Replicas: p.Replicas, ISR: isr}, alive, false)
		if leader == NoLeader && unclean {
			if leader = ElectLeader(&Partition{Replicas: p.Replicas}, alive, true); leader != NoLeader {
				isr = []int32{leader}
			}
		}
	}
	if leader == p.Leader && slices.Equal(isr, p.ISR) {
		return nil
	}
	return WithLeaderAndISR(p, leader, slices.Clone(isr))
}

// Unfence decides what becomes of p when broker is unfenced: an
// offline partition (NoLeader) whose ISR holds the broker elects a leader
// from its ISR again (the broker, or an earlier alive ISR member). The
// broker rejoins ISRs only through the partition leader's AlterPartition.
// It returns nil when p does not change.
func Unfence(p *Partition, broker int32, alive func(int32) bool) *Partition {
	if p.Leader != NoLeader || !slices.Contains(p.ISR, broker) {
		return nil
	}
	leader := ElectLeader(p, alive, false)
	if leader == NoLeader {
		return nil
	}
	return WithLeaderAndISR(p, leader, slices.Clone(p.ISR))
}

// PreferredLeader returns the partition's preferred replica (its first)
// when leadership should move to it: it is alive, in the ISR and not
// already the leader.
func PreferredLeader(p *Partition, alive func(int32) bool) (int32, bool) {
	if len(p.Replicas) == 0 {
		return NoLeader, false
	}
	pref := p.Replicas[0]
	if p.Leader == pref || !alive(pref) || !slices.Contains(p.ISR, pref) {
		return NoLeader, false
	}
	return pref, true
}

// OfflineReplica decides what becomes of p when broker's replica
// of it is offline: if broker leads p, the first alive ISR member in
// assignment order (others excludes broker) takes over, and broker leaves
// the ISR. Unlike fencing, a broker that is the only alive ISR member
// keeps p as it is: electing nobody would take the partition offline for
// good, while the broker's replica may come back once its log opens (the
// leader then answers KAFKA_STORAGE_ERROR, which clients retry). It
// returns nil when p does not change.
func OfflineReplica(p *Partition, broker int32, others func(int32) bool) *Partition {
	inISR := slices.Contains(p.ISR, broker)
	if !inISR && p.Leader != broker {
		return nil
	}
	isr := slices.DeleteFunc(slices.Clone(p.ISR), func(id int32) bool { return id == broker })
	leader := p.Leader
	if leader == broker {
		leader = ElectLeader(&Partition{Replicas: p.Replicas, ISR: isr}, others, false)
		if leader == NoLeader {
			return nil
		}
	}
	if len(isr) == 0 {
		return nil
	}
	return WithLeaderAndISR(p, leader, isr)
}

// PlanReassignment decides what p becomes when a reassignment to target
// starts (target nil: the one in progress is cancelled). It returns a
// copy with the partition epoch bumped, and the leader epoch if the
// leader changes, or why it cannot be done. It does not modify p.
func PlanReassignment(p *Partition, target []int32, alive func(int32) bool) (*Partition, error) {
	original := Without(p.Replicas, p.AddingReplicas)
	n := *p
	n.PartitionEpoch++
	if target == nil {
		if !p.Reassigning() {
			return nil, fmt.Errorf("%w: partition %d", ErrNoReassignmentInProgress, p.ID)
		}
		n.Replicas = original
		n.AddingReplicas, n.RemovingReplicas = nil, nil
	} else {
		n.Replicas = append(slices.Clone(target), Without(original, target)...)
		n.AddingReplicas = Without(target, original)
		n.RemovingReplicas = Without(original, target)
		if len(n.AddingReplicas) == 0 && len(n.RemovingReplicas) == 0 {
			n.Replicas = slices.Clone(target) // a new order only
		}
	}
	// Replicas that leave now (in-flight adding replicas of a replaced or
	// cancelled reassignment) leave the ISR; the original replicas stay.
	n.ISR = Without(p.ISR, Without(p.Replicas, n.Replicas))
	if len(n.ISR) == 0 {
		return nil, fmt.Errorf("%w: partition %d: no in-sync replica would remain (ISR %v, replicas %v)",
			ErrInvalidReplicaAssignment, p.ID, p.ISR, n.Replicas)
	}
	if n.Leader != NoLeader && !slices.Contains(n.ISR, n.Leader) {
		n.Leader = ElectLeader(&n, alive, false)
		if n.Leader == NoLeader {
			return nil, fmt.Errorf("%w: partition %d: no alive in-sync replica could lead", ErrInvalidReplicaAssignment, p.ID)
		}
	}
	if n.Leader != p.Leader {
		n.LeaderEpoch++
	}
	return CompleteReassignment(&n, alive), nil
}

// CompleteReassignment returns p with its reassignment completed when
// every target replica is in the ISR and, if the leader is being removed,
// an alive target replica can take over; else p itself. It does not bump
// the partition epoch (the change it is part of did) but bumps the leader
// epoch if leadership moves.
func CompleteReassignment(p *Partition, alive func(int32) bool) *Partition {
	if !p.Reassigning() {
		return p
	}
	target := p.ReassignmentTarget()
	for _, id := range target {
		if !slices.Contains(p.ISR, id) {
			return p
		}
	}
	n := *p
	n.Replicas = target
	n.ISR = Without(p.ISR, p.RemovingReplicas)
	n.AddingReplicas, n.RemovingReplicas = nil, nil
	if n.Leader != NoLeader && !slices.Contains(target, n.Leader) {
		n.Leader = ElectLeader(&n, alive, false)
		if n.Leader == NoLeader {
			return p // wait until a target replica is alive
		}
		n.LeaderEpoch++
	}
	return &n
}

// PlaceReplicas assigns rf replicas to each of n partitions round-robin over
// brokers (unfenced, sorted by id): replica r of partition p goes to
// brokers[(start+p+r) % len(brokers)], so the replicas of one partition are
// distinct and leaders spread evenly. start is the proposer's random choice.
// The caller checks 1 <= rf <= len(brokers) and n >= 1.
func PlaceReplicas(brokers []int32, n int32, rf int16, start int) [][]int32 {
	out := make([][]int32, n)
	for p := range out {
		replicas := make([]int32, rf)
		for r := range replicas {
			replicas[r] = brokers[(start+p+r)%len(brokers)]
		}
		out[p] = replicas
	}
	return out
}
