package storage

import (
	"errors"

	"github.com/kbroker/kbroker/storage/integrity"
	"github.com/kbroker/kbroker/storage/producerstate"
)

// Sentinel errors. They are wrapped with %w and context; callers test them
// with errors.Is and turn them into Kafka error codes at the handler
// boundary. The producer checks' errors are package producerstate's.
var (
	// ErrOffsetOutOfRange: OFFSET_OUT_OF_RANGE.
	ErrOffsetOutOfRange = errors.New("storage: offset out of range")
	// ErrCorrupt: CORRUPT_MESSAGE (bad CRC, impossible sizes).
	ErrCorrupt = integrity.ErrCorrupt
	// ErrCorruptSegment wraps ErrCorrupt for a stored batch that fails
	// its check (a *CorruptBatchError): KAFKA_STORAGE_ERROR to clients.
	ErrCorruptSegment = integrity.ErrCorruptSegment
	// ErrInvalidRecord: INVALID_RECORD (wrong magic, baseOffset, counts).
	ErrInvalidRecord = errors.New("storage: invalid record")
	// ErrMessageTooLarge: MESSAGE_TOO_LARGE (batch above max.message.bytes).
	ErrMessageTooLarge = errors.New("storage: message too large")
	// ErrOutOfOrderSequence: OUT_OF_ORDER_SEQUENCE_NUMBER.
	ErrOutOfOrderSequence = producerstate.ErrOutOfOrderSequence
	// ErrInvalidProducerEpoch: INVALID_PRODUCER_EPOCH.
	ErrInvalidProducerEpoch = producerstate.ErrInvalidProducerEpoch
	// ErrStorage: KAFKA_STORAGE_ERROR, an I/O operation failed.
	ErrStorage = integrity.ErrStorage
	// ErrNewerFormat: a file of a log dir is in a format version this
	// build does not know, written by a newer kbroker. It is refused,
	// never misread or overwritten: a log dir's checkpoints stop the
	// start, a partition's files keep that partition offline.
	ErrNewerFormat = errors.New("storage: file format newer than this build reads")
	// ErrClosed: the log or manager is closed.
	ErrClosed = errors.New("storage: closed")
	// ErrInvalidTimestamp (INVALID_TIMESTAMP): a CreateTime timestamp too
	// far from the broker's clock.
	ErrInvalidTimestamp = errors.New("storage: record timestamp out of the allowed range")
	// ErrInvalidTxnState: INVALID_TXN_STATE, a non-transactional batch
	// from a producer with an ongoing transaction.
	ErrInvalidTxnState = producerstate.ErrInvalidTxnState
	// ErrTransactionCoordinatorFenced: TRANSACTION_COORDINATOR_FENCED, a
	// transaction marker from an older coordinator epoch than the
	// producer's last marker.
	ErrTransactionCoordinatorFenced = producerstate.ErrTransactionCoordinatorFenced
)

// CorruptBatchError names a stored batch that fails its check (segment
// file, position, offset); CorruptionReports collects a Manager's
// (package integrity).
type (
	CorruptBatchError = integrity.CorruptBatchError
	CorruptionReports = integrity.Reports
)
