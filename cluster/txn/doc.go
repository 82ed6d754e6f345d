// Package txn is the transaction state machine of one transactional id,
// as Kafka's TransactionMetadata and the decisions of its
// TransactionCoordinator, without I/O: time is an argument, every
// transition returns the new metadata to write to __transaction_state,
// and the coordinator (package cluster) applies it once the write is
// replicated. It also holds the __transaction_state record schemas
// (key version 0; value version 0, or 1 with the tagged PreviousProducerId
// after a producer id rotation, Kafka's).
//
// States and the moves between them (Kafka's TransactionState):
//
//	Empty ──AddPartitions──▶ Ongoing ──EndTxn(commit)──▶ PrepareCommit ──markers──▶ CompleteCommit
//	                           │    ──EndTxn(abort)───▶ PrepareAbort  ──markers──▶ CompleteAbort
//	                           └──InitProducerId/timeout──▶ PrepareEpochFence ──▶ PrepareAbort
//	Complete* ──AddPartitions──▶ Ongoing;  Empty/Complete* ──InitProducerId──▶ Empty (epoch bumped)
//	Empty/Complete* ──transactional.id.expiration.ms──▶ Dead (tombstone)
//
// A transactional id has at most one write in flight (Pending): every
// request that finds one gets CONCURRENT_TRANSACTIONS and retries.
//
// It imports kmsg and kerr only, and must never import any kbroker
// package: it does no I/O and holds no timers or locks.
package txn
