// Package sharecoord is the share coordinator of one broker (KIP-932):
// the host of the share-partition states of this broker's partitions of
// __share_group_state, and of the share groups whose __consumer_offsets
// partition it leads, around the pure state machines of cluster/share.
//
// # What it owns
//
// Share-partition states (state.go, Kafka's ShareCoordinatorShard): one
// per (group, topic id, partition), kept under Kafka's key
// group:topicId:partition on partition abs(javaHashCode(key)) %
// partitions of __share_group_state (compacted, created on first use as
// cluster/coordinator creates the state topics, with
// share.coordinator.state.topic.* settings). When the broker becomes the
// leader of such a partition it loads it (the latest value per key; a
// tombstone deletes) and answers COORDINATOR_LOAD_IN_PROGRESS meanwhile;
// when it stops leading it drops it (NOT_COORDINATOR). Read, Write,
// Initialize, Delete and Summary are the state APIs 83–87: each change is
// one record appended with acks=all and installed in memory once the high
// watermark passed it, one at a time per state partition so the log holds
// them in order. Writes carry the share-partition leader's epoch and the
// state epoch: an older one is fenced (FENCED_LEADER_EPOCH,
// FENCED_STATE_EPOCH), so a deposed leader or a state reset by an admin
// never overwrites a newer state.
//
// Share groups (groups.go): membership and assignment through
// share.Group, kept in memory on the group's coordinator (the leader of
// its __consumer_offsets partition, as for every group type). A member
// whose coordinator moved is UNKNOWN_MEMBER_ID and joins again; what
// must survive is the share-partition states, which are durable. The
// admin operations on a group's offsets (DescribeShareGroupOffsets,
// AlterShareGroupOffsets, DeleteShareGroupOffsets, DeleteGroups) go
// through the Persister to the share coordinators of its
// share-partitions, wherever they are.
//
// # Goroutines
//
// Run (the member session ticker and the loader dispatcher) and one
// loader per state partition being loaded, owned by Run and stopped by
// its context. Close fails the waiting writes and refuses new requests.
//
// # Locks
//
// Coordinator.mu guards the states, the led partitions and the groups;
// it is held only for memory work and the Host's look-ups (Image,
// StateReplica, LeadsGroup, GroupPartition), never across an append, the
// purgatory, CreateStateTopic or the Persister. A per-partition write
// lock (partitionLock) is taken before mu and held across one change's
// append and its wait for the high watermark.
//
// # Imports
//
// It sits on cluster/share, cluster/coordinator, replication, storage,
// metadata, purgatory and wire/record. It must never import package
// cluster, cluster/kafkaapi, cluster/sharepart or the other coordinators.
package sharecoord
