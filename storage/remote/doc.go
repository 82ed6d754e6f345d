// Package remote is the object-store side of tiered storage (KIP-405):
// Kafka's RemoteStorageManager over an S3-compatible store, and the
// bounded read-ahead cache that serves consumer reads of remote segments.
//
// It owns the object layout, the S3 client (aws-sdk-go-v2's s3; the
// signer is the SDK's) and reading batches out of a remote segment. It
// does not own which segments exist remotely or in what state (the
// metadata image's RemoteSegment records), nor when segments are copied or
// deleted (package tiered): it is told a segment and does the I/O.
//
// # Object layout
//
// Every file of one uploaded segment is one object, under
//
//	<prefix><topic>-<topicId>/<partition>/<baseOffset, 20 digits>-<segmentId>.<suffix>
//
// with suffix log, index, timeindex, txnindex (only when the segment has
// one), snapshot (the producer state at the segment's end, when any) and
// leader-epoch-checkpoint. topicId and segmentId are base64url without
// padding. segmentId is random per upload attempt, so a retried upload
// never overwrites an earlier attempt's objects, and objects whose id no
// metadata record names are orphans that DeleteSegment (or a sweep by
// listing a partition's prefix) can remove.
//
// # Reads
//
// Reader serves a fetch at an offset inside a remote segment: the
// segment's offset index (cached whole, it is small) gives the position
// of the batch at or before the offset, and the .log object is read in
// fixed-size chunks (rsm.config.chunk.size) through a cache bounded in
// bytes (rsm.config.fetch.chunk.cache.size); the chunk after a read one
// is fetched ahead, by at most remote.log.reader.threads fetches at once.
// Bytes from the store are untrusted: a batch length is checked against
// the segment size before anything is sized by it.
//
// # Goroutines
//
// Reader's read-ahead fetches run on goroutines Reader starts and
// Reader.Close cancels and waits for. S3 starts none of its own (the
// SDK's HTTP client keeps idle connections, closed by Close).
//
// It must never import storage, metadata, replication, cluster or config:
// the tiered package adapts between them.
package remote
