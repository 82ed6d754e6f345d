package metadata

import (
	"encoding/json"
	"fmt"

	"github.com/kbroker/kbroker/metadata/features"
)

// recordType names the kind of a metadata record. The numbers are part of
// the on-disk format: never reuse or renumber one.
type recordType uint8

const (
	recRegisterBroker   recordType = 1
	recFenceBroker      recordType = 2
	recUnfenceBroker    recordType = 3
	recCreateTopic      recordType = 4
	recDeleteTopic      recordType = 5
	recPartitionChange  recordType = 6
	recConfigChange     recordType = 7
	recProducerIDBlock  recordType = 8
	recSetClusterID     recordType = 9
	recCreatePartitions recordType = 10

	recAccessControlEntry        recordType = 11
	recRemoveAccessControlEntry  recordType = 12
	recUserScramCredential       recordType = 13
	recRemoveUserScramCredential recordType = 14

	// Tiered storage (remote_segments.go), numbered from 100.
	recRemoteSegment recordType = 100
)

var recordNames = map[recordType]string{
	recRegisterBroker:   "RegisterBroker",
	recFenceBroker:      "FenceBroker",
	recUnfenceBroker:    "UnfenceBroker",
	recCreateTopic:      "CreateTopic",
	recDeleteTopic:      "DeleteTopic",
	recPartitionChange:  "PartitionChange",
	recConfigChange:     "ConfigChange",
	recProducerIDBlock:  "ProducerIDBlock",
	recSetClusterID:     "SetClusterID",
	recCreatePartitions: "CreatePartitions",

	recAccessControlEntry:        "AccessControlEntry",
	recRemoveAccessControlEntry:  "RemoveAccessControlEntry",
	recUserScramCredential:       "UserScramCredential",
	recRemoveUserScramCredential: "RemoveUserScramCredential",
	recRemoteSegment:             "RemoteSegment",
}

func (t recordType) String() string {
	if n, ok := recordNames[t]; ok {
		return n
	}
	return fmt.Sprintf("recordType(%d)", uint8(t))
}

// recordVersion is the highest version of each record type this code reads
// and the version it writes. A new optional field does not need a new
// version (JSON ignores unknown fields and zeroes missing ones); a change of
// meaning does.
const recordVersion int16 = 1

// envelope is the bytes of one raft log entry: {"type":4,"version":1,"payload":{...}}.
type envelope struct {
	Type    recordType      `json:"type"`
	Version int16           `json:"version"`
	Payload json.RawMessage `json:"payload"`
}

type registerBrokerRecord struct {
	BrokerID      int32      `json:"brokerId"`
	IncarnationID string     `json:"incarnationId"`
	Endpoints     []Endpoint `json:"endpoints"`
	Rack          string     `json:"rack,omitempty"`

	PartitionCapacity int64                     `json:"partitionCapacity,omitempty"`
	Features          map[string]features.Range `json:"features,omitempty"`
}

// fenceBrokerRecord is the payload of both FenceBroker and UnfenceBroker;
// BrokerEpoch must be the broker's current epoch.
//
// Applying a FenceBroker re-elects the leaders of the partitions the broker
// led and removes it from ISRs (decisions.Fence); UncleanTopics lists the
// topics (by id) whose effective unclean.leader.election.enable was true
// when the controller proposed the record, so that the FSM need not know
// the broker defaults. Applying an UnfenceBroker elects leaders of offline
// partitions whose ISR holds the broker (decisions.Unfence).
type fenceBrokerRecord struct {
	BrokerID      int32      `json:"brokerId"`
	BrokerEpoch   int64      `json:"brokerEpoch"`
	UncleanTopics [][16]byte `json:"uncleanTopics,omitempty"`
}

// createPartitionsRecord adds partitions to a topic; Partitions must be
// numbered on from the topic's current partition count.
type createPartitionsRecord struct {
	TopicID    [16]byte          `json:"topicId"`
	Partitions []partitionRecord `json:"partitions"`
	Limits     *partitionLimits  `json:"limits,omitempty"`
}

type partitionRecord struct {
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"`
	ISR       []int32 `json:"isr"`
	Leader    int32   `json:"leader"`
}

type createTopicRecord struct {
	Name       string            `json:"name"`
	TopicID    [16]byte          `json:"topicId"`
	Partitions []partitionRecord `json:"partitions"`
	Configs    map[string]string `json:"configs,omitempty"`
	Limits     *partitionLimits  `json:"limits,omitempty"`
}

type deleteTopicRecord struct {
	TopicID [16]byte `json:"topicId"`
}

// partitionChangeRecord sets the leader and ISR of a partition. LeaderEpoch
// and PartitionEpoch are the epochs the change was decided on; they must be
// the current ones. Applying it bumps PartitionEpoch, and LeaderEpoch if the
// leader changes.
type partitionChangeRecord struct {
	TopicID        [16]byte `json:"topicId"`
	Partition      int32    `json:"partition"`
	Leader         int32    `json:"leader"`
	ISR            []int32  `json:"isr"`
	LeaderEpoch    int32    `json:"leaderEpoch"`
	PartitionEpoch int32    `json:"partitionEpoch"`
}

// configChangeRecord changes a topic's config overrides, or with Cluster
// set the cluster-wide dynamic broker defaults (TopicID unused).
type configChangeRecord struct {
	Cluster bool              `json:"cluster,omitempty"`
	TopicID [16]byte          `json:"topicId"`
	Set     map[string]string `json:"set,omitempty"`
	Remove  []string          `json:"remove,omitempty"`
}

// producerIDBlockRecord gives Count producer ids starting at
// FirstProducerID, which must equal the image's NextProducerID.
type producerIDBlockRecord struct {
	BrokerID        int32 `json:"brokerId"`
	FirstProducerID int64 `json:"firstProducerId"`
	Count           int64 `json:"count"`
}

// setClusterIDRecord sets the cluster id once. Scram holds the bootstrap
// SCRAM credentials (Config.BootstrapScram) of the node that created the
// cluster, applied with the id, so they exist from the first image that
// has a cluster id.
type setClusterIDRecord struct {
	ClusterID string             `json:"clusterId"`
	Scram     []*ScramCredential `json:"scram,omitempty"`
	// Features: a new cluster's finalized levels (features.Bootstrap),
	// applied with the id so that no image has one without the other.
	Features map[string]int16 `json:"features,omitempty"`
}

// accessControlEntryRecord adds one ACL (Kafka's AccessControlEntryRecord);
// the payload is the ACL itself, id included.
type accessControlEntryRecord = ACL

// removeAccessControlEntryRecord removes the ACL of this id.
type removeAccessControlEntryRecord struct {
	ID [16]byte `json:"id"`
}

// userScramCredentialRecord sets one user's credential for one mechanism.
type userScramCredentialRecord = ScramCredential

// removeUserScramCredentialRecord removes one user's credential for one
// mechanism.
type removeUserScramCredentialRecord = ScramKey

// encodeRecord returns the log entry bytes of a record payload.
func encodeRecord(t recordType, payload any) ([]byte, error) {
	p, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("metadata: encode %v record: %w", t, err)
	}
	return json.Marshal(envelope{Type: t, Version: recordVersion, Payload: p})
}

// decodeRecord parses a log entry into its type and a pointer to its
// payload struct.
func decodeRecord(data []byte) (recordType, any, error) {
	var env envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return 0, nil, fmt.Errorf("%w: bad envelope: %v", ErrUnsupportedRecord, err)
	}
	if env.Version < 1 || env.Version > recordVersion {
		return env.Type, nil, fmt.Errorf("%w: %v version %d", ErrUnsupportedRecord, env.Type, env.Version)
	}
	var p any
	switch env.Type {
	case recRegisterBroker:
		p = &registerBrokerRecord{}
	case recFenceBroker, recUnfenceBroker:
		p = &fenceBrokerRecord{}
	case recCreateTopic:
		p = &createTopicRecord{}
	case recDeleteTopic:
		p = &deleteTopicRecord{}
	case recPartitionChange:
		p = &partitionChangeRecord{}
	case recPartitionChangeBatch:
		p = &partitionChangeBatchRecord{}
	case recConfigChange:
		p = &configChangeRecord{}
	case recProducerIDBlock:
		p = &producerIDBlockRecord{}
	case recSetClusterID:
		p = &setClusterIDRecord{}
	case recCreatePartitions:
		p = &createPartitionsRecord{}
	case recAccessControlEntry:
		p = &accessControlEntryRecord{}
	case recRemoveAccessControlEntry:
		p = &removeAccessControlEntryRecord{}
	case recUserScramCredential:
		p = &userScramCredentialRecord{}
	case recRemoveUserScramCredential:
		p = &removeUserScramCredentialRecord{}
	case recAlterReassignment:
		p = &alterReassignmentRecord{}
	case recClientQuota:
		p = &clientQuotaRecord{}
	case recUnregisterBroker:
		p = &unregisterBrokerRecord{}
	case recBrokerConfigChange:
		p = &brokerConfigChangeRecord{}
	case recFeatureLevel:
		p = &featureLevelRecord{}
	case recGroupConfigChange:
		p = &groupConfigChangeRecord{}
	case recDelegationToken:
		p = &DelegationToken{}
	case recRemoveDelegationToken:
		p = &removeDelegationTokenRecord{}
	case recRemoteSegment:
		p = &remoteSegmentRecord{}
	default:
		return env.Type, nil, fmt.Errorf("%w: type %v", ErrUnsupportedRecord, env.Type)
	}
	if err := json.Unmarshal(env.Payload, p); err != nil {
		return env.Type, nil, fmt.Errorf("%w: %v payload: %v", ErrUnsupportedRecord, env.Type, err)
	}
	return env.Type, p, nil
}
