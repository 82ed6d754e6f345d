// Package cleaner is the log cleaner's work on bytes, for storage's
// Log.Clean (Kafka's LogCleaner): the key map of the dirty section
// (KeyMap, Kafka's SkimpyOffsetMap), the decision of what each batch keeps
// (Filter: superseded records, tombstones and transaction markers past
// their delete horizon, aborted transactions), the I/O throttle shared by
// the cleanings at once (Throttle, Throttler) and the recovery at open of
// a swap a crash interrupted (RecoverSwaps).
//
// Package storage owns the rest: which segments are cleanable (it plans
// under Log.mu), the cleaner checkpoint, reading the segments, writing
// the cleaned copies with their indexes and swapping them in under
// Log.mu. It must never import storage; it imports only storage/logfs and
// wire/record.
//
// # Contract with storage
//
// A KeyMap and a Filter belong to one cleaning, run by one goroutine
// holding Log.cleanMu but not Log.mu: they do no I/O and never block. A
// Filter sees every batch of the cleaned segments in offset order, with
// StartSegment before each segment. Throttler.Add sleeps when the
// cleanings are ahead of the rate; the caller holds no log lock then.
// Throttle's lock is a leaf, held for arithmetic only. RecoverSwaps does
// file system calls and may block on the disk; storage calls it while
// opening a log, before anything else can use the log's files.
package cleaner
