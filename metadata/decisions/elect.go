package decisions

import "slices"

// ElectionType is Kafka's ElectionType.
type ElectionType int8

const (
	// ElectPreferred moves leadership to the first replica when it is
	// alive and in the ISR.
	ElectPreferred ElectionType = 0
	// ElectUnclean elects a leader for a partition without one: an alive
	// ISR member if there is one, else any alive replica, whose ISR then
	// becomes just itself (acknowledged records may be lost, as the
	// operator asked).
	ElectUnclean ElectionType = 1
)

// ElectionOutcome is what became of one partition's election. The
// cluster layer maps each to Kafka's error code of the same name.
type ElectionOutcome int8

const (
	// Elected: the election was committed.
	Elected ElectionOutcome = iota
	// ElectionNotNeeded: the preferred replica already leads (preferred),
	// or the partition has a leader (unclean).
	ElectionNotNeeded
	// PreferredLeaderNotAvailable: the first replica is fenced,
	// unregistered or out of the ISR.
	PreferredLeaderNotAvailable
	// EligibleLeadersNotAvailable: no alive replica can lead.
	EligibleLeadersNotAvailable
	// ElectionUnknownPartition: no such topic or partition.
	ElectionUnknownPartition
	// ElectionFailed: the record kept being rejected by concurrent
	// changes, or raft failed; Message says why.
	ElectionFailed
)

// Elect decides an election of type typ for p: the new leader
// and ISR when one is to be committed (outcome Elected), else why not.
// It does not modify p.
func Elect(p *Partition, typ ElectionType, alive func(int32) bool) (leader int32, isr []int32, outcome ElectionOutcome) {
	switch typ {
	case ElectPreferred:
		if len(p.Replicas) > 0 && p.Leader == p.Replicas[0] {
			return NoLeader, nil, ElectionNotNeeded
		}
		pref, ok := PreferredLeader(p, alive)
		if !ok {
			return NoLeader, nil, PreferredLeaderNotAvailable
		}
		return pref, slices.Clone(p.ISR), Elected
	default: // ElectUnclean
		if p.Leader != NoLeader {
			return NoLeader, nil, ElectionNotNeeded
		}
		// An alive ISR member first: it has every acknowledged record.
		if l := ElectLeader(p, alive, false); l != NoLeader {
			return l, slices.Clone(p.ISR), Elected
		}
		if l := ElectLeader(p, alive, true); l != NoLeader {
			return l, []int32{l}, Elected
		}
		return NoLeader, nil, EligibleLeadersNotAvailable
	}
}
