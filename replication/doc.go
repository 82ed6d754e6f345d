// Package replication owns the partitions hosted on one broker and their
// roles: which partitions this broker leads, their leader epochs, ISR and
// high watermarks, and the leader's append path (validation, the
// min.insync.replicas check, the write to storage).
//
// A Manager turns metadata images into partition roles. Its Run goroutine
// watches the metadata store and is stopped by cancelling its context.
// Partitions own no goroutines.
//
// Lock order: Manager.mu before Partition.mu; Partition.mu before the
// storage log's lock (taken inside storage).
package replication
