package metadata

import (
	"maps"
	"slices"
)

// Image is one immutable version of the cluster metadata: the result of
// applying every record of the raft log up to Offset. Nothing in an Image
// (maps, slices, pointed-to structs) may be modified by anybody once it has
// been published; Apply builds the next Image copy-on-write and shares what
// did not change.
type Image struct {
	Offset         uint64 // raft index of the last applied entry
	ClusterID      string
	Brokers        map[int32]*Broker
	Topics         map[string]*Topic
	TopicsByID     map[[16]byte]*Topic
	NextProducerID int64
	// ClusterConfigs are the cluster-wide dynamic broker defaults (broker
	// keys behind topic configs, e.g. log.retention.ms).
	ClusterConfigs map[string]string
	// BrokerConfigs are the per-broker dynamic configs by broker id
	// (brokers.go), over ClusterConfigs on that broker only.
	BrokerConfigs map[int32]map[string]string
	// ACLs are the access control entries; never nil. ACLVersion is the
	// raft index of the last record that changed them, so a cache of
	// authorization decisions knows when to forget.
	ACLs       *ACLs
	ACLVersion uint64
	// Scram holds the SCRAM credentials by user and mechanism.
	Scram map[ScramKey]*ScramCredential
	// Quotas holds the client quota values by entity (quotas.go).
	Quotas map[QuotaEntity]map[string]float64
}

// Endpoint is one listener of a broker.
type Endpoint struct {
	Listener         string
	Host             string
	Port             int32
	SecurityProtocol string
}

// Broker is a registered broker.
type Broker struct {
	ID            int32
	IncarnationID string
	Epoch         int64 // raft index of its registration (Kafka's broker epoch)
	Endpoints     []Endpoint
	Rack          string
	Fenced        bool
	// PartitionCapacity is the partition replicas the broker registered it
	// can host (0: not reported).
	PartitionCapacity int64 `json:",omitempty"`
}

// Topic is a topic and its partitions; Partitions[i].ID == i.
type Topic struct {
	Name       string
	ID         [16]byte
	Partitions []*Partition
	Configs    map[string]string // overrides of the broker defaults only
}

// Partition is the replica set, leader and ISR of one partition.
//
// LeaderEpoch is bumped on every leader change; PartitionEpoch on every
// change of the partition (leader or ISR), and a change proposed against an
// older PartitionEpoch is rejected.
type Partition struct {
	ID             int32
	Replicas, ISR  []int32
	Leader         int32 // NoLeader if none
	LeaderEpoch    int32
	PartitionEpoch int32
	// A reassignment in progress (reassign.go): the replicas being added
	// and those being removed once the target is in the ISR.
	AddingReplicas   []int32 `json:",omitempty"`
	RemovingReplicas []int32 `json:",omitempty"`
}

// NoLeader is the Leader of a partition without one.
const NoLeader int32 = -1

func emptyImage() *Image {
	return &Image{
		Brokers:    map[int32]*Broker{},
		Topics:     map[string]*Topic{},
		TopicsByID: map[[16]byte]*Topic{},
		ACLs:       emptyACLs,
	}
}

// Partition returns a partition of a topic.
func (i *Image) Partition(topic string, p int32) (*Partition, bool) {
	t, ok := i.Topics[topic]
	if !ok || p < 0 || int(p) >= len(t.Partitions) {
		return nil, false
	}
	return t.Partitions[p], true
}

// BrokerEndpoint returns the endpoint of broker id on the named listener.
func (i *Image) BrokerEndpoint(id int32, listener string) (Endpoint, bool) {
	b, ok := i.Brokers[id]
	if !ok {
		return Endpoint{}, false
	}
	for _, e := range b.Endpoints {
		if e.Listener == listener {
			return e, true
		}
	}
	return Endpoint{}, false
}

// UnfencedBrokerIDs returns the ids of the registered, unfenced brokers in
// increasing order.
func (i *Image) UnfencedBrokerIDs() []int32 {
	ids := make([]int32, 0, len(i.Brokers))
	for id, b := range i.Brokers {
		if !b.Fenced {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// TopicNames returns the topic names in increasing order.
func (i *Image) TopicNames() []string {
	return slices.Sorted(maps.Keys(i.Topics))
}

// next returns a shallow copy of i at offset: every map and pointer is
// shared until the caller replaces it (see withTopic and friends).
func (i *Image) next(offset uint64) *Image {
	n := *i
	n.Offset = offset
	return &n
}

// withTopic replaces (or adds) t in a copy of the topic maps.
func (i *Image) withTopic(t *Topic) {
	i.Topics = maps.Clone(i.Topics)
	i.TopicsByID = maps.Clone(i.TopicsByID)
	i.Topics[t.Name] = t
	i.TopicsByID[t.ID] = t
}

// withoutTopic removes t from a copy of the topic maps.
func (i *Image) withoutTopic(t *Topic) {
	i.Topics = maps.Clone(i.Topics)
	i.TopicsByID = maps.Clone(i.TopicsByID)
	delete(i.Topics, t.Name)
	delete(i.TopicsByID, t.ID)
}

// withBroker replaces (or adds) b in a copy of the broker map.
func (i *Image) withBroker(b *Broker) {
	i.Brokers = maps.Clone(i.Brokers)
	i.Brokers[b.ID] = b
}

// updatePartitions replaces every partition p of every topic t for which
// f(t, p) returns non-nil by that result, in copies of the topics and the
// topic maps (cloned once). f sees each partition once and must not depend
// on the order of topics.
func (i *Image) updatePartitions(f func(t *Topic, p *Partition) *Partition) {
	var changed []*Topic
	for _, t := range i.Topics {
		var parts []*Partition
		for j, p := range t.Partitions {
			if n := f(t, p); n != nil {
				if parts == nil {
					parts = slices.Clone(t.Partitions)
				}
				parts[j] = n
			}
		}
		if parts != nil {
			nt := *t
			nt.Partitions = parts
			changed = append(changed, &nt)
		}
	}
	if len(changed) == 0 {
		return
	}
	i.Topics = maps.Clone(i.Topics)
	i.TopicsByID = maps.Clone(i.TopicsByID)
	for _, t := range changed {
		i.Topics[t.Name] = t
		i.TopicsByID[t.ID] = t
	}
}

// NewImage returns an image of brokers and topics (at offset 0, with no
// configs, ACLs or quotas), for tools and tests that need an image
// without a raft log. The image owns the structs passed.
func NewImage(brokers []*Broker, topics []*Topic) *Image {
	img := emptyImage()
	for _, b := range brokers {
		img.Brokers[b.ID] = b
	}
	for _, t := range topics {
		img.Topics[t.Name] = t
		img.TopicsByID[t.ID] = t
	}
	return img
}
