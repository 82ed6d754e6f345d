// Package producerstate is Kafka's ProducerStateManager for one partition:
// per producer id its epoch, its last few batches (duplicate and sequence
// checks of idempotent producers), its ongoing transaction and the
// coordinator epoch of its last marker (State); the partition's
// transactions ordered for the last stable offset (TxnTracker); and the
// .snapshot file format the state is saved in (Encode, DecodeSnapshot).
//
// It is pure computation on record batch headers: no files, no clock, no
// goroutines, no locks. Package storage owns when batches are checked and
// applied, writes and reads the snapshot files, keeps the .txnindex, and
// guards a State and its TxnTracker with Log.mu; nothing here blocks. Its
// errors are re-exported by storage under the same names. It must never
// import storage or any kbroker package but wire/record.
package producerstate
