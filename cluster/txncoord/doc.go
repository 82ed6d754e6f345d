// Package txncoord is the transaction coordinator of one broker: the
// host of the pure state machine of package cluster/txn over this
// broker's partitions of __transaction_state, shaped like the group
// coordinator (package cluster/groupcoord).
//
// # What it owns
//
// A transactional id lives on partition abs(javaHashCode(id)) %
// partitions of __transaction_state (coordinator.PartitionFor), and the
// leader of that partition coordinates it. On becoming leader the
// coordinator reads the partition and rebuilds the transactions
// (COORDINATOR_LOAD_IN_PROGRESS meanwhile, load.go); transactions found
// in PrepareCommit or PrepareAbort get their markers written again. When
// it stops leading, it forgets them and answers NOT_COORDINATOR.
//
// Every state change is one record written with acks=all (store.go)
// while the transactional id is marked pending, so requests that find a
// write in flight get CONCURRENT_TRANSACTIONS; the new state is applied
// only once the write is replicated. A Prepare state hands the
// transaction to the marker sender (markers.go), which writes the COMMIT
// or ABORT markers to every partition of the transaction through
// WriteTxnMarkers on their leaders, retrying across leader changes, and
// then writes the Complete state. The coordinator epoch sent with
// markers is the leader epoch of the __transaction_state partition, as
// in Kafka: a partition refuses markers of an older coordinator.
//
// Cluster's handlers (InitProducerId, AddPartitionsToTxn,
// AddOffsetsToTxn, EndTxn, DescribeTransactions, ListTransactions) and
// its KIP-890 produce verification call the exported methods (ops.go,
// describe.go). MarkerClients (marker_clients.go) are the inter-broker
// clients the host sends markers and verifications through.
//
// # Goroutines
//
// Run (role changes, the timeout and expiration sweeps), the marker
// sender with one goroutine per leader in a round, and one loader per
// partition being loaded, all owned by Run and stopped by its context;
// Run returns once they have. Close, after Run returned or concurrently
// with it, answers the waiting writes.
//
// # Locks
//
// Coordinator.mu guards the transactions, the marker jobs and the led
// partitions. It is held only to read and change them, never while
// calling store (an append runs the high watermark hook, which checks
// the purgatory, whose completions take mu), the purgatory (Close waits
// for expiring operations, whose done functions take mu), a log read, or
// any method of the Host but Image and StateReplica (read-only look-ups
// that take only the replica's own lock): CreateStateTopic waits for the
// controller and opens partitions, whose role changes call OnRoleChange;
// AllocateProducerID waits for the controller; WriteTxnMarkers waits for
// another broker, or appends markers to this broker's logs. The marker
// sender takes mu only to snapshot and update its jobs.
//
// The other way round, the host calls OnRoleChange and OnHighWatermark
// from replication's hooks, which run without replication's locks, and
// the request methods from the handlers, holding none of the
// coordinator's locks; the request methods may block until the state
// write is replicated or the request's context ends. The topic's
// createMu is taken before, never under, mu. MarkerClients.mu is a leaf,
// never held while a request is in flight.
//
// # Imports
//
// It sits on cluster/txn, cluster/coordinator, replication, storage,
// metadata, purgatory, wire/record and the franz-go client (kgo, kmsg,
// kversion, kerr). It must never import package cluster (the node and
// the Kafka API handlers), nor cluster/groupcoord: the group's side of a
// marker goes through cluster's WriteTxnMarkers handler.
package txncoord
