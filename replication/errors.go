package replication

import "errors"

// Errors of the partition layer; the request handlers map them to Kafka
// error codes.
var (
	ErrUnknownTopicOrPartition = errors.New("replication: unknown topic or partition")
	ErrNotLeader               = errors.New("replication: this broker is not the partition leader")
	ErrNotEnoughReplicas       = errors.New("replication: ISR smaller than min.insync.replicas")
	ErrInvalidRequiredAcks     = errors.New("replication: acks must be -1, 0 or 1")
	ErrFencedLeaderEpoch       = errors.New("replication: request leader epoch is older than the partition's")
	ErrUnknownLeaderEpoch      = errors.New("replication: request leader epoch is newer than the partition's")
)
