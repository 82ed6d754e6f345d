package metadata

import "slices"

// The controller's decisions about partition leadership, as pure functions
// of a partition and the set of alive brokers. They are called by the FSM
// (fencing and unfencing re-elect leaders while applying the record, so
// every replica computes the same result) and by the active controller
// (preferred leader election). None of them modifies its input.

// electLeader returns the first replica, in assignment order, that is in
// the ISR and alive; if there is none and unclean election is allowed, the
// first alive replica; else NoLeader.
func electLeader(p *Partition, alive func(int32) bool, unclean bool) int32 {
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

// withLeaderAndISR returns a copy of p with a new leader and ISR and the
// epochs bumped as a PartitionChange would: the partition epoch always, the
// leader epoch when the leader changes.
func withLeaderAndISR(p *Partition, leader int32, isr []int32) *Partition {
	n := *p
	n.ISR = isr
	n.Leader = leader
	n.PartitionEpoch++
	if leader != p.Leader {
		n.LeaderEpoch++
	}
	return &n
}

// fencePartition decides what becomes of p when broker is fenced. alive
// already reports broker as dead. The broker leaves the ISR unless it is
// its last member (Kafka keeps the last one, so that the partition knows
// which replica holds every acknowledged write). If it was the leader, a
// new leader is elected from the remaining ISR; with unclean election
// allowed and no alive ISR member, the first alive replica becomes leader
// with an ISR of itself; otherwise the partition goes offline (NoLeader).
// It returns nil when p does not change.
func fencePartition(p *Partition, broker int32, alive func(int32) bool, unclean bool) *Partition {
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
		leader = electLeader(&Partition{Replicas: p.Replicas, ISR: isr}, alive, false)
		if leader == NoLeader && unclean {
			if leader = electLeader(&Partition{Replicas: p.Replicas}, alive, true); leader != NoLeader {
				isr = []int32{leader}
			}
		}
	}
	if leader == p.Leader && slices.Equal(isr, p.ISR) {
		return nil
	}
	return withLeaderAndISR(p, leader, slices.Clone(isr))
}

// unfencePartition decides what becomes of p when broker is unfenced: an
// offline partition (NoLeader) whose ISR holds the broker elects a leader
// from its ISR again (the broker, or an earlier alive ISR member). The
// broker rejoins ISRs only through the partition leader's AlterPartition.
// It returns nil when p does not change.
func unfencePartition(p *Partition, broker int32, alive func(int32) bool) *Partition {
	if p.Leader != NoLeader || !slices.Contains(p.ISR, broker) {
		return nil
	}
	leader := electLeader(p, alive, false)
	if leader == NoLeader {
		return nil
	}
	return withLeaderAndISR(p, leader, slices.Clone(p.ISR))
}

// preferredLeader returns the partition's preferred replica (its first)
// when leadership should move to it: it is alive, in the ISR and not
// already the leader.
func preferredLeader(p *Partition, alive func(int32) bool) (int32, bool) {
	if len(p.Replicas) == 0 {
		return NoLeader, false
	}
	pref := p.Replicas[0]
	if p.Leader == pref || !alive(pref) || !slices.Contains(p.ISR, pref) {
		return NoLeader, false
	}
	return pref, true
}

// aliveIn reports whether a broker is registered and unfenced in img.
func aliveIn(img *Image) func(int32) bool {
	return func(id int32) bool {
		b, ok := img.Brokers[id]
		return ok && !b.Fenced
	}
}
