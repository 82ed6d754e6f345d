package replication

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/storage"
)

// Errors of the partition layer; KafkaError maps them to Kafka error codes.
var (
	ErrUnknownTopicOrPartition = errors.New("replication: unknown topic or partition")
	ErrNotLeader               = errors.New("replication: this broker is not the partition leader")
	ErrNotEnoughReplicas       = errors.New("replication: ISR smaller than min.insync.replicas")
	ErrInvalidRequiredAcks     = errors.New("replication: acks must be -1, 0 or 1")
	ErrFencedLeaderEpoch       = errors.New("replication: request leader epoch is older than the partition's")
	ErrUnknownLeaderEpoch      = errors.New("replication: request leader epoch is newer than the partition's")
	ErrUnknownTopicID          = errors.New("replication: unknown topic id")
	// ErrReplicaNotAuthorized refuses a follower fetch from a connection
	// that may not act for a broker (Kafka: no ClusterAction on the
	// cluster).
	ErrReplicaNotAuthorized = errors.New("replication: connection may not fetch as a replica")
)

// kafkaErrors maps the errors of this package and of the storage log
// beneath it to the Kafka error a client sees. It is the one table for
// them: the Kafka request handlers and the follower-fetch serving code
// both go through KafkaError.
var kafkaErrors = []struct {
	err  error
	code *kerr.Error
}{
	{ErrUnknownTopicOrPartition, kerr.UnknownTopicOrPartition},
	{ErrNotLeader, kerr.NotLeaderForPartition},
	{ErrNotEnoughReplicas, kerr.NotEnoughReplicas},
	{ErrInvalidRequiredAcks, kerr.InvalidRequiredAcks},
	{ErrFencedLeaderEpoch, kerr.FencedLeaderEpoch},
	{ErrUnknownLeaderEpoch, kerr.UnknownLeaderEpoch},
	{ErrUnknownTopicID, kerr.UnknownTopicID},
	{ErrReplicaNotAuthorized, kerr.TopicAuthorizationFailed},
	{ErrReplicaNotAvailable, kerr.ReplicaNotAvailable},
	{storage.ErrLogDirNotFound, kerr.LogDirNotFound},

	{storage.ErrOffsetOutOfRange, kerr.OffsetOutOfRange},
	// A stored batch failing its check: the replica stops serving the
	// partition (corrupt.go), so the client retries elsewhere.
	{storage.ErrCorruptSegment, kerr.KafkaStorageError},
	{storage.ErrCorrupt, kerr.CorruptMessage},
	{storage.ErrInvalidRecord, kerr.InvalidRecord},
	{storage.ErrMessageTooLarge, kerr.MessageTooLarge},
	{storage.ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber},
	{storage.ErrInvalidProducerEpoch, kerr.InvalidProducerEpoch},
	{storage.ErrStorage, kerr.KafkaStorageError},
	{storage.ErrInvalidTimestamp, kerr.InvalidTimestamp},
	{storage.ErrInvalidTxnState, kerr.InvalidTxnState},
	{storage.ErrTransactionCoordinatorFenced, kerr.TransactionCoordinatorFenced},
	// A log closed under a request: the partition moved away.
	{storage.ErrClosed, kerr.NotLeaderForPartition},
}

// KafkaError returns the Kafka error for an error of this package or of
// its storage log (matched with errors.Is, so wrapped errors count), or
// nil when err is none of them.
func KafkaError(err error) *kerr.Error {
	if err == nil {
		return nil
	}
	for _, m := range kafkaErrors {
		if errors.Is(err, m.err) {
			return m.code
		}
	}
	return nil
}

// errorCode is the Kafka error code of err for a response built in this
// package: 0 for nil, UNKNOWN_SERVER_ERROR for an error KafkaError does
// not know.
func errorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	if ke := KafkaError(err); ke != nil {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}
