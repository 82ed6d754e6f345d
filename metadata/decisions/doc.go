// Package decisions is the active controller's decisions about partitions,
// as pure functions of a partition and the set of alive brokers: leader
// election (ElectLeader; Elect for an operator's ElectLeaders), fencing
// and unfencing a broker (Fence, Unfence), a replica gone offline
// (OfflineReplica), the preferred leader (PreferredLeader), reassignments
// (PlanReassignment, CompleteReassignment), replica placement
// (PlaceReplicas, CheckAssignment, FirstAlive), topic names
// (ValidateTopicName, SameMetricName) and AlterPartition's checks of a
// change (ChangePartition, CheckSender, CheckISR). Partition is defined
// here; package metadata aliases it (metadata.Partition, NoLeader,
// ElectionType, ...), so callers keep its names.
//
// The FSM calls them while it applies a record (fencing and unfencing
// re-elect leaders, an ISR expansion completes a reassignment), so every
// replica of the metadata log computes the same result: no clock, no
// randomness, no map order, and none modifies its input. The active
// controller calls them to decide what it proposes.
//
// It must never import metadata (which imports it), raft or any other
// kbroker package: standard library only.
package decisions
