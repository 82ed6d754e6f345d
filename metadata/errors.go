package metadata

import (
	"errors"

	"github.com/kbroker/kbroker/metadata/decisions"
)

// Sentinel errors. Operations wrap them with context (%w); the request
// handlers map them to Kafka error codes with errors.Is.
var (
	// ErrNotController: this node is not the active controller (raft
	// leader). Kafka: NOT_CONTROLLER.
	ErrNotController = errors.New("metadata: not the active controller")
	// ErrTopicExists: Kafka TOPIC_ALREADY_EXISTS.
	ErrTopicExists = errors.New("metadata: topic already exists")
	// ErrUnknownTopic: Kafka UNKNOWN_TOPIC_OR_PARTITION (or UNKNOWN_TOPIC_ID).
	ErrUnknownTopic = errors.New("metadata: unknown topic")
	// ErrInvalidTopic: a name Kafka would refuse, or one that collides with
	// an existing topic once '.' and '_' are treated alike. Kafka:
	// INVALID_TOPIC_EXCEPTION.
	ErrInvalidTopic = decisions.ErrInvalidTopic
	// ErrDuplicateTopic: the same topic named twice in one request. Kafka:
	// INVALID_REQUEST.
	ErrDuplicateTopic = errors.New("metadata: topic named more than once in the request")
	// ErrInvalidPartitions: Kafka INVALID_PARTITIONS.
	ErrInvalidPartitions = errors.New("metadata: invalid number of partitions")
	// ErrInvalidReplicationFactor: below 1 or above the number of unfenced
	// registered brokers. Kafka: INVALID_REPLICATION_FACTOR.
	ErrInvalidReplicationFactor = errors.New("metadata: invalid replication factor")
	// ErrInvalidReplicaAssignment: Kafka INVALID_REPLICA_ASSIGNMENT.
	ErrInvalidReplicaAssignment = decisions.ErrInvalidReplicaAssignment
	// ErrInvalidConfig: Kafka INVALID_CONFIG. The wrapped text names the key.
	ErrInvalidConfig = errors.New("metadata: invalid config")
	// ErrUnknownBroker: the record names a broker that is not registered.
	ErrUnknownBroker = errors.New("metadata: unknown broker")
	// ErrStaleBrokerEpoch: a fence/unfence record for an older registration
	// of the broker. Kafka: STALE_BROKER_EPOCH.
	ErrStaleBrokerEpoch = errors.New("metadata: stale broker epoch")
	// ErrStalePartitionEpoch: a partition change based on an older partition
	// epoch than the current one. Kafka: INVALID_UPDATE_VERSION.
	ErrStalePartitionEpoch = decisions.ErrStalePartitionEpoch
	// ErrFencedLeaderEpoch: a partition change based on an older leader
	// epoch than the current one. Kafka: FENCED_LEADER_EPOCH.
	ErrFencedLeaderEpoch = decisions.ErrFencedLeaderEpoch
	// ErrInvalidPartitionChange: a partition change whose leader or ISR is
	// not made of the partition's replicas. Kafka: INVALID_REQUEST.
	ErrInvalidPartitionChange = decisions.ErrInvalidPartitionChange
	// ErrClusterIDSet: an attempt to change an already set cluster ID.
	ErrClusterIDSet = errors.New("metadata: cluster id already set")
	// ErrUnsupportedRecord: a record type or version this code does not know
	// (written by a newer kbroker).
	ErrUnsupportedRecord = errors.New("metadata: unsupported record")
	// ErrPartitionLimit: creating the partitions would exceed
	// max.partitions or max.broker.partitions. Kafka: POLICY_VIOLATION
	// (an operator's policy refuses the request as a whole; retrying
	// does not help, unlike THROTTLING_QUOTA_EXCEEDED, and the partition
	// count itself is valid, unlike INVALID_PARTITIONS).
	ErrPartitionLimit = errors.New("metadata: partition limit reached")
	// ErrNotAuthorized: the authenticated peer of the controller listener
	// may not send this request (it acts for another node). Kafka:
	// CLUSTER_AUTHORIZATION_FAILED.
	ErrNotAuthorized = errors.New("metadata: peer not authorized")
	// ErrUnknownACL: a RemoveAccessControlEntry for an id the image does
	// not hold (removed concurrently).
	ErrUnknownACL = errors.New("metadata: unknown acl")
	// ErrInvalidACL: an ACL the FSM refuses (a zero id, an id already used
	// by another entry). Kafka: INVALID_REQUEST.
	ErrInvalidACL = errors.New("metadata: invalid acl")
	// ErrScramNotFound: deleting a SCRAM credential that does not exist.
	// Kafka: RESOURCE_NOT_FOUND.
	ErrScramNotFound = errors.New("metadata: scram credential not found")
	// ErrDuplicateVoter: AddVoter of a node that is a voter already.
	// Kafka: DUPLICATE_VOTER.
	ErrDuplicateVoter = errors.New("metadata: already a voter")
	// ErrVoterNotFound: RemoveVoter of a node that is not a voter. Kafka:
	// VOTER_NOT_FOUND.
	ErrVoterNotFound = errors.New("metadata: not a voter")
	// ErrVoterNotReady: a voter change that cannot be made yet: the new
	// voter does not follow the log or has not caught up, or another
	// change is in progress. Kafka: REQUEST_TIMED_OUT, as its
	// AddVoterHandler and RemoveVoterHandler answer.
	ErrVoterNotReady = errors.New("metadata: voter change not possible yet")
	// ErrVoterChangeRefused: a voter change kbroker refuses: removing the
	// last voter, a removal that would leave no live majority, an address
	// that is not the node's. Kafka: INVALID_REQUEST.
	ErrVoterChangeRefused = errors.New("metadata: voter change refused")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("metadata: store closed")
)
