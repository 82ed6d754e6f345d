package cluster

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/storage"
	"github.com/kbroker/kbroker/wire/record"
)

// errorCode turns an error from the layers below into the Kafka error code
// a client sees. This is the one place where that choice is made.
func errorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	for _, m := range errorCodes {
		if errors.Is(err, m.err) {
			return m.code.Code
		}
	}
	return kerr.UnknownServerError.Code
}

var errorCodes = []struct {
	err  error
	code *kerr.Error
}{
	{replication.ErrUnknownTopicOrPartition, kerr.UnknownTopicOrPartition},
	{replication.ErrNotLeader, kerr.NotLeaderForPartition},
	{replication.ErrNotEnoughReplicas, kerr.NotEnoughReplicas},
	{replication.ErrInvalidRequiredAcks, kerr.InvalidRequiredAcks},
	{replication.ErrFencedLeaderEpoch, kerr.FencedLeaderEpoch},
	{replication.ErrUnknownLeaderEpoch, kerr.UnknownLeaderEpoch},

	{storage.ErrOffsetOutOfRange, kerr.OffsetOutOfRange},
	{storage.ErrCorrupt, kerr.CorruptMessage},
	{storage.ErrInvalidRecord, kerr.InvalidRecord},
	{storage.ErrMessageTooLarge, kerr.MessageTooLarge},
	{storage.ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber},
	{storage.ErrInvalidProducerEpoch, kerr.InvalidProducerEpoch},
	{storage.ErrStorage, kerr.KafkaStorageError},
	{storage.ErrInvalidTimestamp, kerr.InvalidTimestamp},
	{storage.ErrClosed, kerr.NotLeaderForPartition},

	{record.ErrMagic, kerr.InvalidRecord},
	{record.ErrInvalid, kerr.InvalidRecord},
	{record.ErrCorrupt, kerr.CorruptMessage},
	{record.ErrTruncated, kerr.CorruptMessage},
	{record.ErrTooLarge, kerr.RecordListTooLarge},

	{metadata.ErrNotController, kerr.NotController},
	{metadata.ErrTopicExists, kerr.TopicAlreadyExists},
	{metadata.ErrUnknownTopic, kerr.UnknownTopicOrPartition},
	{metadata.ErrInvalidTopic, kerr.InvalidTopicException},
	{metadata.ErrDuplicateTopic, kerr.InvalidRequest},
	{metadata.ErrInvalidPartitions, kerr.InvalidPartitions},
	{metadata.ErrInvalidReplicationFactor, kerr.InvalidReplicationFactor},
	{metadata.ErrInvalidReplicaAssignment, kerr.InvalidReplicaAssignment},
	{metadata.ErrInvalidConfig, kerr.InvalidConfig},
	{metadata.ErrPartitionLimit, kerr.PolicyViolation},
	{metadata.ErrStalePartitionEpoch, kerr.InvalidUpdateVersion},
	{metadata.ErrClosed, kerr.NotController},
}

// errorMessage is the text sent with an error code in versions that carry
// one.
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}
