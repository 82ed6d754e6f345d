// Package tiered is the remote log manager of tiered storage (KIP-405,
// Kafka's RemoteLogManager): it copies the closed segments of the
// partitions this broker leads to remote storage, applies total retention
// (retention.ms, retention.bytes) to the remote segments, cleans up after
// uploads a dead leader left half done, tells every hosted log how far
// the remote copy reaches (so local retention deletes only copied
// segments), and serves consumer reads below the local log start from
// the store (replication.RemoteLog).
//
// What is remote is the metadata image's (metadata.RemoteSegment
// records): a segment is written COPY_SEGMENT_STARTED before its first
// object is put and COPY_SEGMENT_FINISHED after its last, each with the
// leader's epoch, so a new leader knows what is remote and deletes what
// an interrupted upload left (DELETE_SEGMENT_STARTED, the objects,
// DELETE_SEGMENT_FINISHED). Every attempt has a new segment id, so a
// retry never overwrites objects another record names.
//
// # Goroutines
//
// Run owns one loop per node, woken every
// remote.log.manager.task.interval.ms; it starts at most one task per
// led partition at a time, at most remote.log.manager.copier.thread.pool.size
// at once, each under Run's context, and waits for them before it
// returns. A failed task is retried after a backoff that doubles from
// remote.log.manager.task.retry.backoff.ms up to
// remote.log.manager.task.retry.backoff.max.ms. Nothing here is on the
// produce path or the local fetch path: a store that is down or slow
// delays copies and remote reads only (each store call has a deadline).
//
// It imports metadata, replication, storage and storage/remote; it must
// never import cluster, config or the Kafka API handlers (cluster maps
// the config into Config).
package tiered
