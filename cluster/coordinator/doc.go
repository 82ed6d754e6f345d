// Package coordinator is the machinery the group coordinator
// (cluster/groupcoord) and the transaction coordinator
// (cluster/txncoord) share around their internal topics
// (__consumer_offsets, __transaction_state).
//
// # What it owns
//
//   - InternalTopic: creating the state topic on first use (compacted,
//     infinite retention, the replication factor capped at the live
//     brokers), its partition count, and FindCoordinator's answer for a
//     key: the leader of the key's partition.
//   - PartitionFor and JavaStringHashCode: a key's partition, exactly as
//     Kafka computes it, so clients and brokers agree.
//   - LedPartitions: the partitions a coordinator leads and the load
//     token of each term of leadership, so a load finishing after the
//     leadership moved installs nothing.
//   - OffsetsReplica, the replica a coordinator reads and writes, and
//     DelayedStore and StoreError: waiting for a write's high watermark
//     in a coordinator's purgatory, and the Kafka error of a failed
//     append.
//   - Wake, the non-blocking kick of a coordinator's goroutines.
//
// It starts no goroutines.
//
// # Locks
//
// InternalTopic.createMu serialises creations of one topic; it is held
// across the controller call (10s at most), so a coordinator must never
// call Ensure or CoordinatorFor under its own lock. LedPartitions has no
// lock of its own: it is guarded by the owning coordinator's mu, and
// ApplyRoleChangesLocked calls its callbacks with that lock held (they
// must only start a load elsewhere, or drop state in memory).
// DelayedStore's Done runs under the purgatory's operation lock and may
// take the coordinator's mu (in that order, never the reverse).
//
// # Imports
//
// It sits on metadata, replication, storage and wire/record. It must
// never import package cluster (the node and the Kafka API handlers),
// nor either coordinator: they import it.
package coordinator
