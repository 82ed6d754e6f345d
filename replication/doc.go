// Package replication owns the partitions hosted on one broker and their
// roles: which partitions this broker leads, their leader epochs, ISR and
// high watermarks, the leader's append path (validation, the
// min.insync.replicas check, the write to storage), and Kafka's
// pull-based replication between leader and followers.
//
// # Roles
//
// A Manager turns metadata images into partition roles (Apply). A
// partition whose image leader is this broker is a leader; one led by
// another broker is a follower, served by the fetcher of that leader.
//
// Becoming leader (or a new leader epoch as leader) resets the follower
// tracking: every follower's log end offset is unknown (so the high
// watermark cannot move until each ISR member has fetched) and every
// follower gets the full replica.lag.time.max.ms from now. The high
// watermark starts at max(checkpoint, current) and never moves back while
// leading.
//
// # Logs on disk
//
// A partition's log is opened by its topic's id (storage
// GetOrCreateTopic, partition.metadata), and removed when the image stops
// listing this broker, or lists a topic of that name with another id.
// What a broker missed while it was down is settled by the first current
// image (ManagerConfig.Current) it applies, before it opens anything: the
// stray logs on disk (topic gone, partition assigned elsewhere, another
// topic id) are removed (stray.go, Kafka's KAFKA-14616). An image not
// known to be current removes nothing, and opens no log on disk whose
// topic id it cannot check.
//
// # Leader side
//
// The Fetch handler passes follower fetches (ReplicaID >= 0) to
// ReadFollowerFetch, which builds the whole response (the in-memory test
// transport calls it too; waiting for MinBytes is the caller's). For each
// partition it checks the leader epoch, then who is asking: the replica
// id must name one of the partition's replicas, a registered and
// unfenced broker in the image, at its registered broker epoch when the
// request carries one (v15+, KIP-903), and the connection must vouch for
// a broker (FetchPeer; with security on, a broker principal on the
// inter-broker listener). Otherwise the fetch is refused and nothing
// moves: a forged replica id must not advance the high watermark. It
// then detects a diverging log from the follower's last fetched epoch
// (KIP-320: the answer is the leader's end offset of that epoch, no
// records), records the follower's log end offset and catch-up time
// (CaughtUpTime), advances the high watermark to the minimum log end
// offset over the ISR (HighWatermark) and returns records up to the log
// end offset. KafkaError is the one table from this package's and the
// storage log's errors to Kafka error codes. A follower outside the
// ISR that reached the high watermark and the start of the leader's epoch
// (CanJoinISR) is proposed for the ISR; every replica.lag.time.max.ms / 2
// the ISR checker proposes removing the followers that have not caught up
// within replica.lag.time.max.ms (LaggingReplicas). Proposals go through
// the ISRChanger (AlterPartition semantics), one in flight per partition,
// and take effect only when an image applies them. An ISRBatcher gets
// them queued and sent many partitions a request, one request at a time
// (alter_partition.go, Kafka's AlterPartitionManager). EndOffsetForEpoch
// answers OffsetForLeaderEpoch, treating the current epoch as starting at
// the log end offset of the moment this broker became leader (Kafka
// records it in the epoch cache then; storage records an epoch with its
// first batch).
//
// # Follower side
//
// A fetcher (one per leader) dials the leader's endpoint on the
// inter-broker listener. For a partition it starts following (a new
// leader or a new epoch) it first asks OffsetForLeaderEpoch for the
// latest local epoch and truncates to the answer (TruncationOffset,
// KIP-101/279: when the leader answers an epoch the follower never had,
// truncate to the end of the follower's own earlier epoch and ask again).
// Then it fetches (v12, FetchOffset = log end offset, LastFetchedEpoch =
// latest local epoch) through an incremental fetch session with the
// leader (KIP-227, fetch_session.go): a full request opens it, the next
// ones name only partitions new to it or whose fetch state changed and
// forget those no longer ready, since the leader reads every session
// partition at its cached state whether named or not; the fetcher
// handles every partition the answer carries, names afresh one whose
// answer it could not apply, and starts over with a full request after
// a session error, a failed request or a new connection
// (ManagerConfig.NoFetchSessions: full requests only). A partition that
// becomes ready while the session fetch waits at the leader (a new
// topic's, one back from a backoff) is fetched at once by a side fetch,
// without a session and on another connection, that ends before the
// session fetch; a partition is in one request at a time and then joins
// the session's next one (fetcher run). It truncates on a
// diverging-epoch answer by the same
// rule, appends the batches byte for byte (AppendAsFollower) and sets the
// high watermark to min(leader's, log end offset), never lower. A fetch
// OFFSET_OUT_OF_RANGE below the leader's log start offset restarts the
// log there; otherwise it asks OffsetForLeaderEpoch again. Partition
// errors back the partition off (20ms doubling to 1s) until the image
// moves it; connection errors back the fetcher off likewise and redial.
// Every follower write runs under the partition lock held shared and
// after checking the partition still follows that leader in that epoch,
// so a role change (which takes it exclusively) never interleaves with
// one.
//
// # Goroutines
//
// Run is the only goroutine the caller starts. It applies images, and
// owns, through one tracked helper (spawn): a fetcher per leader this
// broker follows (started and stopped by Apply as partitions move; each
// sends its Fetch requests from goroutines it owns and waits for), the
// ISR checker, one short-lived goroutine per ISR proposal (with an
// ISRBatcher, one sender while changes are queued), and one mover
// per replica AlterReplicaLogDirs is moving to another log dir
// (logdir.go). Run also takes the partitions of a failed log dir offline
// when storage signals one (logdir.go), and repairs the replicas whose
// logs found a corrupt batch (corrupt.go: a follower truncates and
// refetches, a leader stops leading until another replica leads). All stop
// when Run's context ends, and Run returns only after they have. Apply
// may be called without Run (handlers do, to see a topic they just
// created); fetchers then start when Run does.
//
// The hooks (OnHighWatermark, OnLogAppend, OnRoleChange) are called on
// the goroutine that caused the change — a request handler, a fetcher or
// Run — never under a lock of this package.
//
// # Lock order
//
// Manager.mu, then Manager.run (the running context), then Partition.mu or
// fetcher.mu (never both), then the storage log's lock (taken inside
// storage).
// Partition.mu is held shared across leader and follower appends and
// truncations, exclusively by role updates.
//
// It imports storage, metadata, wire/record, config, internal/quota and
// franz-go's client (the follower fetchers); it must never import cluster
// or purgatory: delayed requests are the handlers'.
package replication
