// Package integrity checks that the record batches read back from a
// partition log's segments are the batches that were written: flipped
// bits on the disk or in a controller must never reach a consumer or a
// follower, which would replicate the garbage.
//
// It owns:
//
//   - the sentinel errors storage re-exports for I/O failures and corrupt
//     data (ErrStorage, ErrCorrupt), and CorruptBatchError, which names the
//     segment file, the byte position and the first offset of a stored
//     batch that fails its check (ErrCorruptSegment);
//   - Scanner, the sequential batch reader of recovery, the cleaner and
//     the scrubber, and ReadLogBelow, which reads a partition directory's
//     batches for comparing replicas byte for byte;
//   - Reports, where the logs of a storage Manager record the corrupt
//     batches they find: a counter for the metric, and the reports the
//     replica manager takes to repair or take the replica offline;
//   - Scrubber, which verifies the CRC of every batch of the closed
//     segments in the background at a bounded rate (Redpanda's and Ceph's
//     scrub), one segment at a time, without any lock of the log.
//
// What the logs do with a corrupt batch (refuse to serve it, report it)
// and which segments are verified are package storage's; what a replica
// does about one (truncate and refetch as a follower, stop leading as a
// leader) is package replication's.
//
// It must never import storage, replication or any other kbroker package
// but wire/record and storage/logfs: storage imports it.
//
// Locks: Reports.mu is a leaf, taken under the storage log's lock by the
// read that finds a corrupt batch. The Scrubber holds no lock while it
// reads; it rechecks a batch that failed through the Segment's Recheck,
// which takes the log's read lock.
package integrity
