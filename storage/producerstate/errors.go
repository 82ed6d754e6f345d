package producerstate

import "errors"

// Sentinel errors of the producer checks, re-exported by storage under the
// same names (storage.ErrOutOfOrderSequence is this ErrOutOfOrderSequence):
// callers test them with errors.Is.
var (
	// ErrOutOfOrderSequence: OUT_OF_ORDER_SEQUENCE_NUMBER.
	ErrOutOfOrderSequence = errors.New("storage: out of order sequence number")
	// ErrInvalidProducerEpoch: INVALID_PRODUCER_EPOCH.
	ErrInvalidProducerEpoch = errors.New("storage: invalid producer epoch")
	// ErrInvalidTxnState: INVALID_TXN_STATE, a non-transactional batch
	// from a producer with an ongoing transaction.
	ErrInvalidTxnState = errors.New("storage: invalid transaction state")
	// ErrTransactionCoordinatorFenced: TRANSACTION_COORDINATOR_FENCED, a
	// transaction marker from an older coordinator epoch than the
	// producer's last marker.
	ErrTransactionCoordinatorFenced = errors.New("storage: transaction coordinator fenced")
)
