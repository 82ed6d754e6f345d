// Package groupcoord is the group coordinator of one broker: the host of
// the pure state machine of package cluster/group over this broker's
// partitions of __consumer_offsets.
//
// # What it owns
//
// A group lives on partition abs(javaHashCode(group.id)) % partitions of
// __consumer_offsets (coordinator.PartitionFor), and the leader of that
// partition is its coordinator. When this broker becomes leader of such
// a partition (OnRoleChange), the coordinator reads the partition from
// its log start to its log end (as Kafka's GroupMetadataManager does),
// keeps the latest value per key (a null value deletes), rebuilds the
// groups and their offsets, and answers COORDINATOR_LOAD_IN_PROGRESS
// meanwhile (load.go). When it stops leading, it drops those groups
// (waiting joins and syncs get NOT_COORDINATOR) and answers
// NOT_COORDINATOR from then on.
//
// Writes (offset commits, the leader's assignment, tombstones) are one
// uncompressed batch appended with acks=all and acknowledged once the
// partition's high watermark passes it: a coordinator.DelayedStore in
// the groups purgatory, checked by the OnHighWatermark and OnRoleChange
// hooks, with offsets.commit.timeout.ms (Kafka's default, 5s) as its
// deadline (store.go). Transactional offset commits are held until their
// transaction's marker (txn_offsets.go); consumer (KIP-848) groups are
// served by consumer.go. Lag (lag.go) is the consumer lag of its groups
// for the metrics: committed offsets copied under the lock, against the
// high watermarks of the partitions this broker hosts, read after it.
//
// The topic is created on first use with cleanup.policy=compact and
// infinite retention (package cluster/coordinator). Offsets of Empty
// groups expire after offsets.retention.minutes: the sweep runs every
// offsets.retention.check.interval.ms (Kafka's default, 10 minutes) and
// writes tombstones; an Empty group left without offsets is deleted (a
// group tombstone) by the same sweep (offsets.go).
//
// Cluster's request handlers (api_08 … api_69) call the exported
// methods (members.go, offsets.go, txn_offsets.go, consumer.go), which
// take and release the lock themselves; helpers named …Locked require it
// held. Whatever is Kafka's wire format (decoding requests, error codes
// and messages, authorization) stays in the handlers.
//
// # Goroutines
//
// Run (the ticker, the offsets expiry sweep and the loader dispatcher)
// and one loader per partition being loaded, all owned by Run and
// stopped by its context; Run returns once they have. Close, after Run
// returned or concurrently with it, fails the waiting requests.
//
// # Locks
//
// Coordinator.mu guards the groups and the led partitions. It may be
// held while calling:
//   - package group (a Group's methods), which calls back the respond
//     functions of waiting JoinGroup and SyncGroup requests: a respond
//     function must never block nor call back into the coordinator
//     (cluster's handlers only hand the response to the connection);
//   - read-only look-ups of the Host: Image and OffsetsReplica, and a
//     replica's IsLeader and LeaderEpoch, which take only the replica's
//     own lock.
//
// It must never be held while calling:
//   - store (an append to __consumer_offsets): AppendAsLeader runs the
//     high watermark hook, which checks the purgatory, whose completions
//     take mu; and the completion of a write takes mu itself;
//   - the purgatory (waiters.Check, TryCompleteElseWatch, Close): Close
//     waits for expiring operations, whose done functions take mu;
//   - the Host's CreateOffsetsTopic: it waits for the controller and
//     opens partitions, whose role changes call OnRoleChange, which
//     takes mu;
//   - a log read (loading reads outside the lock and installs under it).
//
// The other way round, the host calls OnRoleChange and OnHighWatermark
// from replication's hooks, which run without replication's locks, and
// calls the request methods from the handlers, holding none of the
// coordinator's locks; the done and respond callbacks it passes may run
// on its own goroutine before the method returns, or on the purgatory's.
// The topic's createMu (one creation of the topic at a time) is taken
// before, never under, mu.
//
// # Imports
//
// It sits on cluster/group, cluster/coordinator, replication, storage,
// metadata, purgatory and wire/record. It must never import package
// cluster (the node and the Kafka API handlers), nor cluster/txncoord:
// what a transaction's marker does to the offsets comes in through
// CompleteTxnOffsets, called by cluster's WriteTxnMarkers handler.
package groupcoord
