package errcode

import (
	"errors"
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/metadata/features"
	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/wire/record"
)

// Of turns an error from the layers below into the Kafka error code
// a client sees. This is the one place where that choice is made, but for
// the errors of the partition layer and its logs, which
// replication.KafkaError maps.
func Of(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	// The partition layer and its logs keep their own table, shared with
	// the follower-fetch serving code in package replication.
	if ke := replication.KafkaError(err); ke != nil {
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
	{metadata.ErrNoReassignmentInProgress, kerr.NoReassignmentInProgress},
	{metadata.ErrClosed, kerr.NotController},
	{metadata.ErrScramNotFound, kerr.ResourceNotFound},
	{metadata.ErrUnknownACL, kerr.ResourceNotFound},
	{metadata.ErrInvalidACL, kerr.InvalidRequest},
	{metadata.ErrInvalidQuota, kerr.InvalidRequest},
	{metadata.ErrBrokerNotRegistered, kerr.BrokerIDNotRegistered},
	{metadata.ErrBrokerAlive, kerr.InvalidRequest},
	{metadata.ErrDuplicateVoter, kerr.DuplicateVoter},
	{metadata.ErrVoterNotFound, kerr.VoterNotFound},
	{metadata.ErrVoterNotReady, kerr.RequestTimedOut},
	{metadata.ErrVoterChangeRefused, kerr.InvalidRequest},
	{features.ErrInvalidUpdateVersion, kerr.InvalidUpdateVersion},
	{features.ErrUnsupportedFeature, kerr.UnsupportedVersion},
}

// Message is the text sent with an error code in versions that carry
// one.
func Message(err error) *string {
	if err == nil {
		return nil
	}
	s := Redact(err.Error())
	return &s
}

// filesystemPath matches an absolute or dotted-relative Unix path, the only
// kind of path our errors carry (log directories, segment files).
var filesystemPath = regexp.MustCompile(`(?:\.{0,2}/[\w.\-]+)+/?`)

// Redact removes filesystem paths from an error message sent to a
// client: where the broker keeps its files is none of the client's
// business, and the full error is in the broker's log.
func Redact(msg string) string {
	return filesystemPath.ReplaceAllString(msg, "<path>")
}
