// Package storage keeps partition logs on disk: one Log per partition
// (segments, offset assignment, idempotent-producer state, recovery) and a
// Manager of all logs under the log directories.
//
// # Directory layout
//
//	<log.dir>/
//	  .kafka_cleanshutdown                  present only between a clean Close and the next open
//	  recovery-point-offset-checkpoint      per-partition recovery points
//	  <topic>-<partition>/
//	    00000000000000000000.log            segment: batches back to back
//	    00000000000000000000.index          sparse offset index of that segment
//	    00000000000000001234.log            next segment, named by its base offset
//	    00000000000000001234.index
//	    00000000000000005678.snapshot       producer state at offset 5678
//
// Segment files are named by the 20-digit zero-padded base offset: the
// offset of the first batch they hold. The last segment is the active one;
// appends go there. A new segment starts when a batch would take the
// active one past segment.bytes, when its first batch is older than
// segment.ms, or when its index is full.
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
// A .snapshot file is the idempotent-producer state at the offset in its
// name, written at Close and at each roll (big-endian):
//
//	+--------+---------+--------+-------+---------------------------------+
//	| "KBPS" | version | crc32c | count | count × entry                   |
//	| 4B     | u16 = 1 | u32    | u32   |                                 |
//	+--------+---------+--------+-------+---------------------------------+
//	entry: producerId i64 | epoch i16 | n u8 | n × (firstSeq i32, lastSeq
//	       i32, firstOffset i64, lastOffset i64, maxTimestamp i64)
//
// The CRC-32C covers everything after the crc field.
//
// recovery-point-offset-checkpoint is Kafka's text format:
//
//	0                 version
//	2                 number of entries
//	orders 0 1200     topic partition offset
//	orders 1 87
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
// with its .log is rebuilt. Producer state is loaded from the newest
// snapshot at or below the log end offset, then replayed from the batch
// headers after it (or from the whole log when there is none).
//
// # Durability
//
// Appends are not fsynced unless flush.messages says so; the old segment
// is fsynced at each roll, the active one at Flush, on flush.ms (by
// Manager.Run) and at Close. The recovery point is the offset below which
// everything is fsynced.
//
// # Locks and goroutines
//
// Lock order: Manager.mu, then Log.mu. Log.mu is a RWMutex: AppendAsLeader,
// Flush and Close hold it exclusively (so offsets are assigned and bytes
// written in one order), Read and OffsetForTimestamp share it.
//
// The package starts no goroutines. Manager.Run is meant to be run by the
// caller in one goroutine; it flushes logs due a flush.ms flush and
// returns when its context is done.
package storage
