// Package storage keeps partition logs on disk: one Log per partition
// (segments, offset assignment, idempotent and transactional producer
// state, recovery) and a Manager of all logs under the log directories.
//
// Three parts live in subpackages, which import nothing of storage:
// storage/logfs (File, FS and OSFS, which storage names by alias, segment
// file names, atomic checkpoint writes, preallocation, the descriptor
// cache), storage/producerstate (Kafka's ProducerStateManager and the
// .snapshot format; storage re-exports its errors) and storage/cleaner
// (the cleaner's key map, record filter, I/O throttle and swap recovery;
// the Log plans, scans, writes and swaps the segments).
//
// # Directory layout
//
//	<log.dir>/
//	  .kafka_cleanshutdown                  present only between a clean Close and the next open
//	  recovery-point-offset-checkpoint      per-partition recovery points
//	  log-start-offset-checkpoint           per-partition log start offsets
//	  replication-offset-checkpoint         per-partition high watermarks
//	  cleaner-offset-checkpoint             per-partition first dirty offset of compacted logs
//	  <topic>-<partition>/
//	    partition.metadata                  the topic id (partition_metadata.go)
//	    00000000000000000000.log            segment: batches back to back
//	    00000000000000000000.index          sparse offset index of that segment
//	    00000000000000000000.timeindex      sparse time index of that segment
//	    00000000000000001234.log            next segment, named by its base offset
//	    00000000000000001234.index
//	    00000000000000001234.timeindex
//	    00000000000000001234.txnindex       aborted transactions whose ABORT marker is in that segment (only if any)
//	    00000000000000005678.snapshot       producer state at offset 5678
//	    leader-epoch-checkpoint             leader epoch -> first offset
//	    00000000000000001234.log.cleaned    a segment being rewritten by the cleaner
//	    00000000000000001234.log.swap       (and .index/.timeindex/.txnindex) a cleaned segment being swapped in
//	  <topic>-<partition>.<id>-future/      a log being moved here by AlterReplicaLogDirs (move.go)
//	  <topic>-<partition>.<id>-delete/      a deleted partition, or the source of a finished move, removed after file.delete.delay.ms
//
// # File format versions
//
// Every file carries or implies its format version, and one a newer
// kbroker wrote is refused, never misread or overwritten (ErrNewerFormat,
// naming the file): a log dir's checkpoints stop the Manager from
// opening, so the node does not start; a partition's files stop its log
// from opening with a storage error, so the replica stays offline and is
// reported while the others serve.
//
//	segments, .index, .timeindex, .txnindex   Kafka's formats; the batches' magic byte (2) versions the records
//	the four offset checkpoints               Kafka's: a first line "0"
//	leader-epoch-checkpoint                   Kafka's: a first line "0"
//	partition.metadata                        Kafka's: "version: 0"
//	.snapshot                                 "KBPS", then a version (1 or 2)
//	.kafka_cleanshutdown                      its presence alone; its content is not read
//
// A malformed file of a known version is another matter: a checkpoint is
// ignored (recovery rebuilds what it held), a producer snapshot is
// replaced by replaying the log, a bad partition.metadata keeps the
// replica offline.
//
// Segment files are named by the 20-digit zero-padded base offset: the
// offset of the first batch they hold. The last segment is the active one;
// appends go there. A new segment starts when a batch would take the
// active one past segment.bytes, when its first batch is older than
// segment.ms, or when its offset or time index is full.
//
// # File formats
//
// A .log file is record batches (magic 2) exactly as the producer sent
// them, except baseOffset and partitionLeaderEpoch, which lie outside the
// CRC (and, with LogAppendTime, maxTimestamp and the CRC):
//
//	+-------------+-------------+-----+-------------+
//	| batch N     | batch N+1   | ... | batch M     |
//	| 61B header  |             |     |             |
//	| + records   |             |     |             |
//	+-------------+-------------+-----+-------------+
//
// An .index file is 8-byte big-endian entries, appended as the log grows
// (one after every index.interval.bytes of batches), in increasing order:
//
//	+--------------------+------------------+
//	| relative offset i32| file position i32|   relative offset = the
//	+--------------------+------------------+   batch's last offset - base
//
// To find offset o: binary-search the segments' base offsets, then the
// segment's index for the last entry <= o, then read batch headers from
// that position. The index is append-only (not preallocated), so a crash
// can only leave it short or with entries past the end of the .log; both
// are detected and it is rebuilt from the .log.
//
// With preallocate=true a new active segment's .log is created
// segment.bytes long (fallocate on Linux, else a sparse truncate; the
// indexes are not preallocated) and trimmed to the bytes written when the
// segment is rolled or closed (prealloc.go). After a crash its tail is
// zeroes: a zero batch length is not a batch, so recovery ends the log at
// the last valid batch, as for any torn tail.
//
// A .timeindex file is 12-byte big-endian entries (Kafka's format),
// appended together with an offset index entry whenever the segment's
// largest timestamp so far grew past the last entry's, and once more when
// the segment is rolled (a slot is kept for it), so that the last entry
// of an inactive segment is its max timestamp and the offset of it:
//
//	+--------------------+--------------------+
//	| timestamp i64      | relative offset i32|   the segment's max timestamp
//	+--------------------+--------------------+   so far, and the last offset
//	                                              of the first batch having it
//
// Timestamps and offsets increase strictly. It holds
// max(segment.index.bytes/12, 2) entries. To find the first record with a
// timestamp >= ts: skip segments whose max timestamp is < ts (timestamps
// are not monotonic across segments, so no binary search there), take the
// last entry with timestamp <= ts (or the base offset), find its batch
// with the offset index, and scan batches from there, decoding the first
// whose maxTimestamp is >= ts. The max timestamp drives retention.ms and
// MAX_TIMESTAMP lookups; it is rebuilt by recovery like the offset index.
//
// A .txnindex file (Kafka's TransactionIndex) lists the transactions
// aborted by an ABORT marker in its segment, in marker order, as 34-byte
// big-endian entries:
//
//	+-------------+----------------+----------------+---------------+---------------------+
//	| version i16 | producerId i64 | firstOffset i64| lastOffset i64| lastStableOffset i64|
//	| = 0         |                | of the txn     | = the marker  | when it was written |
//	+-------------+----------------+----------------+---------------+---------------------+
//
// lastStableOffset is the first offset of the earliest other ongoing
// transaction then, or the marker's offset + 1: a search for the aborted
// transactions overlapping [fetchOffset, upper bound) stops at the first
// entry whose lastStableOffset reaches the upper bound. The file is
// created with the segment's first abort; its entries are also kept in
// memory.
//
// A .snapshot file is the producer state at the offset in its name,
// written at Close and at each roll (big-endian; producerstate.Encode):
//
//	+--------+---------+--------+-------+---------------------------------+
//	| "KBPS" | version | crc32c | count | count × entry                   |
//	| 4B     | u16 = 2 | u32    | u32   |                                 |
//	+--------+---------+--------+-------+---------------------------------+
//	entry: producerId i64 | epoch i16 | coordinatorEpoch i32 |
//	       currentTxnFirstOffset i64 (-1: none) | n u8 | n × (firstSeq
//	       i32, lastSeq i32, firstOffset i64, lastOffset i64, maxTimestamp
//	       i64)
//
// The CRC-32C covers everything after the crc field. Version 1 (without
// the two transaction fields) is still read.
//
// recovery-point-offset-checkpoint is Kafka's text format:
//
//	0                 version
//	2                 number of entries
//	orders 0 1200     topic partition offset
//	orders 1 87
//
// log-start-offset-checkpoint (log start offsets, which may lie inside the
// first segment after DeleteRecords) and replication-offset-checkpoint
// (high watermarks, as set with SetHighWatermarkCheckpoint) use the same
// format, one file per log directory:
//
//	+---------------------------------+
//	| 0\n                             |  version
//	| <count>\n                       |  number of entries
//	| <topic> <partition> <offset>\n  |  count lines, e.g. "orders 0 1200"
//	+---------------------------------+
//
// leader-epoch-checkpoint (per partition, Kafka's LeaderEpochFileCache)
// maps each leader epoch to the first offset written in it, epochs and
// offsets increasing:
//
//	+-------------------------+
//	| 0\n                     |  version
//	| <count>\n               |  number of entries
//	| <epoch> <startOffset>\n |  count lines, e.g. "3 1200"
//	+-------------------------+
//
// It gets an entry when an appended batch (leader or follower) carries a
// new partitionLeaderEpoch, is rewritten atomically then, is trimmed by
// TruncateTo, and is rebuilt from the batches of recovered segments; at
// open, entries starting at or past the log end offset are dropped.
//
// All checkpoint files are written to a .tmp file, fsynced and renamed.
//
// partition.metadata is Kafka's (PartitionMetadataFile), written the same
// way when a log is created for a topic id (GetOrCreateTopic), before its
// first segment:
//
//	+--------------------------------+
//	| version: 0\n                   |
//	| topic_id: <topic id>\n         |  Kafka's Uuid string: the 16 bytes in
//	+--------------------------------+  URL-safe base64 without padding
//
// A log opened for another topic id belongs to an older topic of that name
// and is refused (ErrInconsistentTopicID) or, when the caller knows its id
// is current, deleted as Manager.Delete does and replaced by an empty log.
// A log without the file (kbroker before topic ids) is adopted, and gets
// it, when the id is current, and is refused otherwise. PartitionDirs lists every partition directory
// with its id, for the replica manager's removal of stray logs at start.
//
// # Validating a leader's append
//
// AppendAsLeader checks every record of a client batch (validateForAppend,
// Kafka's LogValidator). A compressed batch is never expanded whole: when
// it keeps its codec (compression.type producer or the same codec) its
// records are scanned as they stream out of the decompressor through a
// 32 KiB window (record.Scan); when the topic asks for another codec they
// stream from the decompressor into the new compressor (record.Rebuild).
// A batch may decompress to 64 × max.message.bytes, at most
// record.MaxDecompressedBatchBytes (128 MiB); past that it is refused as
// INVALID_RECORD. Decompressions in progress share the process-wide
// record.DecompressionBudget (256 MiB), so many bombs at once wait rather
// than exhaust memory.
//
// # Recovery
//
// OpenManager removes each directory's clean-shutdown marker and remembers
// whether it was there. Without it, a log is checked batch by batch from
// the segment holding its recovery point: a truncated batch, a size past
// the file end, a bad magic, a CRC mismatch or offsets going backwards
// ends the log there. That segment is truncated, every later segment
// deleted and the index rebuilt; nothing after a bad batch is kept. With
// the marker the files are trusted, except that an index inconsistent
// with its .log is rebuilt. Interrupted cleaner swaps are finished or
// discarded before anything else (see Log cleaning). Producer state is loaded from the newest
// snapshot at or below the log end offset, then replayed from the batch
// headers after it (or from the whole log when there is none). The
// replay also re-derives the .txnindex entries of the ABORT markers it
// passes, adding those a crash lost; entries whose marker is past the
// end of the (recovered) log are dropped first.
//
// # Transactions
//
// A transactional producer's batches carry the transactional attribute
// bit; its transaction ends with a marker, a control batch (transactional
// and control bits, the producer id and epoch, no sequence) holding one
// control record: key version i16 = 0 and type i16 (0 ABORT, 1 COMMIT),
// value version i16 = 0 and the coordinator epoch i32. Clients cannot
// write control batches; AppendControl (WriteTxnMarkers) does, refusing a
// producer epoch older than the producer's (ErrInvalidProducerEpoch; a
// newer one becomes current) or a coordinator epoch older than its last
// marker's (ErrTransactionCoordinatorFenced).
//
// The producer state (Kafka's ProducerStateManager) keeps, per producer,
// the first offset of its ongoing transaction (set by its first
// transactional batch, cleared by its marker) and the coordinator epoch
// of its last marker; the Log keeps the ongoing transactions by first
// offset and the completed ones whose marker is not yet below the high
// watermark (Kafka's unreplicatedTxns). The first unstable offset is the
// smallest first offset among both (at least the log start offset); the
// last stable offset is min(first unstable offset, high watermark), so it
// never passes a transaction before its marker is replicated. A
// non-transactional batch from a producer inside a transaction is
// ErrInvalidTxnState. Leader, follower and replayed appends update the
// state the same way (only the leader checks), so replicas agree.
// ActiveProducers reads that state for DescribeProducers.
//
// TruncateTo cuts the .txnindex of the cut segment at the new end and
// rebuilds the producer state from a snapshot at or below it, so a
// transaction whose marker was truncated is ongoing again; deleted
// segments take their .txnindex with them.
//
// The cleaner (below) never cleans from the first unstable offset on; in
// the cleaned range it drops the batches of aborted transactions (known
// from the .txnindex entries) and does not let them supersede committed
// records in the key map. As Kafka's cleaner, it drops a marker only in a
// pass that read no data of its transaction (so never while any is left),
// once past its batch's delete horizon (the tombstone rule below), if
// it lies below the newest producer snapshot (a replay from it would
// miss it) and is not possibly the producer's last record (a producer
// whose state holds no batch keeps the markers of its epoch). A cleaned
// segment gets a new .txnindex without the entries of its dropped ABORT
// markers, swapped in with its other files (.txnindex.cleaned,
// .txnindex.swap): an entry without its marker would make a
// read_committed consumer skip the producer's later data.
//
// # Retention and truncation
//
// Only whole segments are deleted, oldest first, never the active one:
// by ApplyRetention (retention.ms against a segment's max timestamp,
// then retention.bytes) run by Manager.Run every retention check interval,
// and by DeleteRecordsBefore (which also raises the log start offset,
// possibly into a segment). Each .log is first renamed to .log.deleted,
// which removes the segment for the next open in one atomic step; its
// other files are removed after (orphans and .deleted files are removed
// at open). For retention, DeleteRecords and truncation,
// file.delete.delay.ms (when the log belongs to a Manager) keeps the
// segment's files, all renamed .deleted, until the Manager removes them
// after the delay (delete.go, Manager.DeleteDue, every 100 ms in Run). A
// crash leaves a suffix of the log. TruncateTo deletes segments newest
// first the same way, then truncates and fsyncs the cut segment and
// rebuilds its indexes: a crash leaves a prefix of the log.
// Manager.Delete (a deleted topic or moved replica) renames the partition
// directory <topic>-<partition>.<unique id>-delete and removes it after
// the log's file.delete.delay.ms; the next open removes any -delete
// directory left.
// The log start offset never drops below the first segment's base
// offset; reads below it are ErrOffsetOutOfRange.
//
// # Log cleaning (cleanup.policy=compact)
//
// Log.Clean is Kafka's log cleaner for one log. It works on the inactive
// segments below the cleanable end: the active segment's base offset, or
// the base of the first segment holding a record newer than
// min.compaction.lag.ms. It first maps every key of the dirty section
// (from the first dirty offset, kept in cleaner-offset-checkpoint in the
// text format above, to the cleanable end) to its latest offset, then
// rewrites each segment below the cleanable end keeping, per key, only
// the record at that offset. Null-key records are kept. A tombstone (null
// value) is kept by the first cleaning that reaches it, which rewrites its
// batch with Kafka's delete horizon (KIP-534): attribute bit 6 set and the
// base timestamp the cleaning time + delete.retention.ms, the records'
// timestamp deltas rebased so each keeps its timestamp; a later cleaning
// at or past the horizon drops it (a removable transaction marker's batch
// the same). Offsets never change: a batch that loses records
// is rebuilt (record.Build) with its base offset, producer id, epoch, base
// sequence, attributes, codec and partition leader epoch, its records'
// original offset deltas (gaps allowed: read them with
// record.IterateCompacted) and lastOffsetDelta from its last record. A
// batch left with no records is dropped, except that the last record of
// an idempotent producer's latest batch is kept, so that a producer state
// rebuilt from the log still knows its last sequence (Kafka keeps an empty
// batch instead). Segments left empty stay (time retention may delete
// them). The log start and end offsets do not change. A fetch at an
// offset cleaned away gets the next batch holding a later offset; a
// follower of a compacted topic accepts such forward gaps
// (AppendAsFollower), a follower of a delete-only topic does not.
//
// A segment from which nothing would be removed is not rewritten.
// Otherwise the copy is written to <base>.log.cleaned with
// .index.cleaned and .timeindex.cleaned (indexes built as recovery builds
// them) and fsynced. Then, under the log's lock: the index and time index
// are renamed to .swap, then the .log to .log.swap (the commit point),
// and the directory fsynced; then the three .swap files are renamed over
// the originals, .log last, and the directory fsynced again. At open,
// before segments are listed, .cleaned files are removed, a segment with
// a .log.swap has its .swap files renamed over the originals, and .swap
// files without a .log.swap are removed: a crash leaves each segment
// either old or cleaned, never a mix. Reads and appends go on during the
// cleaning, which takes the lock only to plan and to swap; a truncation,
// retention or Close meanwhile makes the swap back out (Aborted).
//
// Each replica cleans its own log, as in Kafka: after cleaning, replicas
// agree on every surviving record's offset and contents but not
// necessarily on segment bytes.
//
// With cleanup.policy "compact" alone ApplyRetention deletes nothing;
// with "compact,delete" both apply. The cleaner's key map is a fixed
// table of 24-byte slots (a key's MD5 and its latest offset, as Kafka's
// SkimpyOffsetMap) within log.cleaner.dedupe.buffer.size; when the dirty
// section has more keys than fit, Clean maps what fits, cleans up to
// there and checkpoints that offset: the next Clean is the next pass
// (cleaner.KeyMap).
//
// Segment rolls: segment.bytes, segment.ms less a per-segment random
// draw below segment.jitter.ms (roll.go), and for compacted logs at most
// max.compaction.lag.ms, so that records leave the active segment and
// become cleanable within the lag.
//
// # Durability
//
// Appends are not fsynced unless flush.messages says so; the old segment
// is fsynced at each roll, the active one at Flush, on flush.ms (by
// Manager.Run) and at Close. The recovery point is the offset below which
// everything is fsynced.
//
// # Open files
//
// A Manager's logs open every file through a bounded cache of
// descriptors (logfs.Cache, SetOpenFileLimit): a file's descriptor is
// closed when it is the least recently used one and more than the limit
// are open, and reopened by name when the file is next used; renames and
// removals through the Manager's FS keep the names right. A log of a
// Manager therefore holds descriptors only for the files it is using, so
// 10,000 partition replicas of one segment (30,000 files) fit any limit.
// Logs opened with OpenLog alone hold their files open.
//
// # Log directory failure and moves
//
// Every file operation goes through logfs.WatchFS: a disk error
// (anything but a missing or existing file, EOF, a closed file, or
// running out of descriptors) takes the whole log directory offline
// (logdir_failure.go, Kafka's LogDirFailureChannel). An offline directory
// takes no new partition, refuses to open the ones it holds
// (ErrLogDirOffline), gets no more checkpoints or clean-shutdown marker,
// and DirFailures tells the owner, which takes its partitions offline and
// closes their logs with TakeOfflineLogs. A restart with the disk healthy
// brings it back. MoveLog (move.go) moves a log to another directory
// while it stays online: a copy without the log's lock, the rest and the
// commit (current renamed -delete, then the future renamed into place)
// under it, then the same *Log reads the new files. A crash leaves a
// future beside its current log (removed at open) or alone (renamed into
// place at open).
//
// # Pooled reads
//
// Every read checks each batch's CRC before serving it; one that fails is
// never served, and is reported (scrub.go, replication corrupt.go).
// ReadPooled is Read into buffers from wire's size-classed pools
// (readbuf.go, wire.GetBuf), for the fetch paths, whose records live only
// until their response is encoded onto the socket: the bytes belong to
// the ReadBuffers passed in and are valid until its Release, after which
// nothing may read them (test binaries, -race builds and the
// kbroker_poison tag overwrite released buffers with 0xAA to make a use
// after Release visible). Every caller that keeps what it reads (the
// group and transaction coordinators' loads, the tools, tests) uses Read,
// which allocates.
//
// # Locks and goroutines
//
// Lock order: Manager.mu, then Log.syncMu, then Log.mu (MoveLog holds
// all three to finish a move; SyncTo the last two), then the file
// cache's lock (logfs.Cache, a leaf, held without file system calls). Log.mu is a RWMutex: appends,
// truncation, retention, Flush and Close hold it exclusively (so offsets are assigned and bytes
// written in one order), Read and OffsetForTimestamp share it.
//
// The package starts no goroutines except CleanLogs' workers and Run's
// scrubber (scrub.go, package integrity), which it waits for. Manager.Run is meant to be run by the
// caller in one goroutine; it flushes logs due a flush.ms flush, applies
// retention every retention check interval (SetRetentionCheckInterval,
// default 5 minutes), writes the log start offset and high watermark
// checkpoints that changed every 5 seconds, removes deleted segments'
// files whose file.delete.delay.ms passed, cleans compacted logs whose
// dirty ratio reached min.cleanable.dirty.ratio or whose oldest dirty
// record passed max.compaction.lag.ms every cleaner backoff
// (SetCleanerBackoff, default 15 seconds, re-arming a running Run;
// SetCleaner for log.cleaner.enable and the dedupe buffer and I/O limits,
// SetCleanerThreads for log.cleaner.threads, all changeable while Run
// runs; CleanLogs, dirtiest log first, up to log.cleaner.threads logs at
// once in workers of its own that share the dedupe buffer and one I/O
// throttle, without the Manager's lock), and returns when its context is
// done.
//
// Log.cleanMu serializes Clean and DirtyRatio on one log; it is taken
// before Log.mu, never while holding it.
package storage
