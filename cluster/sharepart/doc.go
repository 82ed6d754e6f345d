// Package sharepart is the share-partition leader of one broker
// (KIP-932, Kafka's SharePartitionManager): for each partition this
// broker leads and each share group fetching it, the share.Partition of
// its delivery state, loaded from the share coordinator (Persister) on
// first use and after every leadership change, and every change to it
// persisted there before the client is answered; and the share sessions
// of the members fetching from this broker.
//
// # What it owns
//
// ShareFetch and ShareAcknowledge (fetch.go): a member's share session
// moves by its epoch (0 opens one and drops its previous one, releasing
// what it held; -1 closes it after its acknowledgements, releasing what
// the member still holds; any other must be the session's), its
// acknowledgements apply all or none per partition (INVALID_RECORD_STATE
// for a record it does not hold), then records are acquired from each
// partition of the session, from its fetch offset up to the high
// watermark (the last stable offset with share.isolation.level =
// read_committed, whose aborted transactions, as control batches, are
// passed without being delivered). A change whose state cannot be
// persisted is rolled back and answered with the error: nothing the
// client is told failed has happened, and nothing acknowledged is
// delivered again after a failover. A fetch that acquired nothing waits
// in the fetch purgatory up to its MaxWait (wait.go). Run ends the
// acquisition locks on time (group.share.record.lock.duration.ms or the
// group's share.record.lock.duration.ms), persisting records archived at
// the delivery count limit.
//
// A share-partition's leader epoch is the partition's when it was
// loaded: a newer one reloads it, and the share coordinator fences the
// writes of the older one. A state fenced by an admin's reset
// (FENCED_STATE_EPOCH) is dropped and loaded again.
//
// # Goroutines
//
// Run (the lock ticker), owned by the node and stopped by its context.
// Fetches and acknowledgements run on the handler's goroutine; a waiting
// fetch blocks it up to its MaxWait, bounded by its context.
//
// # Locks
//
// Manager.mu guards the share-partitions and sessions, for memory work
// only. Each share-partition's mu serialises its operations including
// their persistence (a call to the share coordinator, possibly on
// another broker, bounded by a timeout); it is never taken under
// Manager.mu, and the purgatory is checked with no mu held but the
// share-partition's own (its operations' TryComplete take only
// Manager.mu).
//
// # Imports
//
// It sits on cluster/share, replication (topic partitions, its errors),
// storage (aborted transactions), purgatory and wire/record. It must
// never import package cluster, cluster/kafkaapi or cluster/sharecoord.
package sharepart
