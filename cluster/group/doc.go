// Package group is Kafka's classic consumer-group state machine, and the
// KIP-848 consumer group's (consumer.go, with its assignors and records),
// without I/O: no goroutines, no timers, no logs. Time comes in as a now
// argument, so tests drive it with a fake clock.
//
// A Group is not safe for concurrent use: the coordinator (package
// cluster, groups*.go) holds its lock around every call.
//
// # The caller's duties
//
//  1. Route each JoinGroup, SyncGroup, Heartbeat, LeaveGroup and
//     OffsetCommit of a group to its Group, with the current time.
//  2. Call Tick regularly (the coordinator does every 100ms, and tests
//     whenever they move the clock): it expires sessions, completes
//     rebalances whose timeout passed, and ends the initial rebalance
//     delay.
//  3. Persist what the Group asks to persist: a Sync by the leader
//     returns a snapshot to write (GroupMetadataValue); when the write is
//     replicated call AssignmentStored, which answers the waiting members.
//     Offsets are validated with ValidateCommit, written, then applied with
//     CommitOffsets once replicated. After any call, TakeDirty says whether
//     the group's metadata record must be written again (it became Empty,
//     or a static member got a new id without a rebalance).
//
// Responses to JoinGroup and SyncGroup may come later than the call: the
// caller passes a respond function that the Group calls exactly once,
// possibly during a later call (Join, Tick, Leave, ...), always under the
// caller's lock; it must not block.
//
// # States
//
//	Empty ──join──▶ PreparingRebalance ──all joined / timeout──▶ CompletingRebalance
//	  ▲                 ▲        │                                  │ leader's sync stored
//	  │                 │        └──no member left──▶ Empty         ▼
//	  │                 └───────join / leave / expiry────────── Stable
//	  └── last member leaves (via PreparingRebalance)
//
// Dead is a group that was deleted or expired (its coordinator drops it).
//
// # Differences from Kafka
//
//   - A pending member (KIP-394) that never rejoins is dropped after its
//     session timeout; Kafka does the same.
//   - Kafka's "new member join timeout" (5 minutes for a new member that
//     never rejoins during a rebalance) is the rebalance timeout here.
//   - Members that got a JoinGroup response and never send SyncGroup are
//     removed by their session timeout (they must heartbeat), not by
//     Kafka 2.8's separate pending-sync timer.
//
// It imports kmsg, kerr and kbin only, and must never import any kbroker
// package: it does no I/O and holds no timers or locks.
package group
