package metadata

import (
	"maps"
	"slices"
	"sync"

	"github.com/kbroker/kbroker/metadata/decisions"
	"github.com/kbroker/kbroker/metadata/features"
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
	// GroupConfigs are the GROUP config resources' values by group id
	// (group_configs.go).
	GroupConfigs map[string]map[string]string
	// ACLs are the access control entries; never nil. ACLVersion is the
	// raft index of the last record that changed them, so a cache of
	// authorization decisions knows when to forget.
	ACLs       *ACLs
	ACLVersion uint64
	// Scram holds the SCRAM credentials by user and mechanism.
	Scram map[ScramKey]*ScramCredential
	// Tokens holds the delegation tokens by id (tokens.go).
	Tokens map[string]*DelegationToken
	// Quotas holds the client quota values by entity (quotas.go).
	Quotas map[QuotaEntity]map[string]float64
	// features are the finalized levels (nil: features.Implied) and
	// featuresEpoch the index of their last change (feature_levels.go).
	features      map[string]int16
	featuresEpoch int64
	// remote holds the remote log segments by partition
	// (remote_segments.go); replaced whole, copy-on-write.
	remote map[RemotePartition][]*RemoteSegment

	// Indexes derived from Topics, so that no record and no request
	// needs a pass over every partition (or a sort of every name) for
	// what they hold. withTopic, withoutTopic and updatePartitions keep
	// them in step; NewImage and a snapshot restore build them. nil in an
	// Image built by hand as a struct literal: the methods using them then
	// compute what they need from Topics. They are not part of the
	// snapshot format.
	replicas *replicaCounts
	names    *sortedNames

	// batch is set on the images a batch of records goes through
	// (applyBatch), and topicsOwner on those whose Topics and TopicsByID
	// are the batch's own copy: the batch's later records change them in
	// place instead of copying them again. Both are nil on every image
	// anybody else sees.
	batch, topicsOwner *batchToken
}

// batchToken identifies one applyBatch. topics are the topic copies the
// batch made (setPartition), which its later records change in place.
type batchToken struct {
	topics map[*Topic]bool
}

// replicaCounts is how many partitions the image has and how many replicas
// each broker hosts (brokers hosting none are absent). Immutable once in
// an image: a change makes a new one.
type replicaCounts struct {
	total     int64
	perBroker map[int32]int64
}

// sortedNames is the sorted topic names, computed on first use. One is
// shared by the successive images that have the same topic names (an ISR
// change does not sort them again); a topic created or deleted starts a
// new one.
type sortedNames struct {
	once sync.Once
	list []string
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
	// Features are the levels it registered it supports (nil: a build
	// before feature levels, features.Baseline).
	Features map[string]features.Range `json:",omitempty"`
}

// Topic is a topic and its partitions; Partitions[i].ID == i.
type Topic struct {
	Name       string
	ID         [16]byte
	Partitions []*Partition
	Configs    map[string]string // overrides of the broker defaults only
}

// Partition and NoLeader are package decisions'.
type Partition = decisions.Partition

// NoLeader is the Leader of a partition without one.
const NoLeader = decisions.NoLeader

func emptyImage() *Image {
	return &Image{
		Brokers:    map[int32]*Broker{},
		Topics:     map[string]*Topic{},
		TopicsByID: map[[16]byte]*Topic{},
		ACLs:       emptyACLs,
		replicas:   &replicaCounts{perBroker: map[int32]int64{}},
		names:      &sortedNames{},
	}
}

// reindex builds the indexes of an image whose Topics were filled in
// directly (a restore, NewImage).
func (i *Image) reindex() {
	c := &replicaCounts{perBroker: map[int32]int64{}}
	for _, t := range i.Topics {
		c.total += int64(len(t.Partitions))
		for _, p := range t.Partitions {
			for _, r := range p.Replicas {
				c.perBroker[r]++
			}
		}
	}
	i.replicas = c
	i.names = &sortedNames{}
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

// TopicNames returns the topic names in increasing order, in a slice the
// caller owns.
func (i *Image) TopicNames() []string {
	return slices.Clone(i.SortedTopicNames())
}

// SortedTopicNames returns the topic names in increasing order, in a slice
// shared by every caller (and by the next images while no topic is created
// or deleted): it must not be modified. Sorting happens once per set of
// names, not once per request.
func (i *Image) SortedTopicNames() []string {
	if i.names == nil {
		return slices.Sorted(maps.Keys(i.Topics))
	}
	i.names.once.Do(func() { i.names.list = slices.Sorted(maps.Keys(i.Topics)) })
	return i.names.list
}

// next returns a shallow copy of i at offset: every map and pointer is
// shared until the caller replaces it (see withTopic and friends).
func (i *Image) next(offset uint64) *Image {
	n := *i
	n.Offset = offset
	return &n
}

// ownTopicMaps makes Topics and TopicsByID i's own, to change: copies of
// the maps, unless i is in a batch that copied them already.
//
// The copy is O(topics) per topic record: the maps are plain maps that
// brokers read without a lock, so a published image's maps cannot be
// changed. applyBatch pays it once per batch of records (up to raft's
// MaxAppendEntries) instead of once per record.
func (i *Image) ownTopicMaps() {
	if i.batch != nil && i.topicsOwner == i.batch {
		return
	}
	i.Topics = maps.Clone(i.Topics)
	i.TopicsByID = maps.Clone(i.TopicsByID)
	i.topicsOwner = i.batch
}

// withTopic replaces (or adds) t in the topic maps (ownTopicMaps). The
// indexes are updated from the partitions of t that changed only.
//
// In a batch the maps are changed in place, which earlier images of the
// batch see too: an apply function changes the topic maps as its last
// step, after every check that may reject the record.
func (i *Image) withTopic(t *Topic) {
	old := i.Topics[t.Name]
	var d countDelta
	d.diff(old, t)
	i.replicas = i.replicas.plus(&d)
	if old == nil {
		i.names = &sortedNames{}
	}
	i.ownTopicMaps()
	i.Topics[t.Name] = t
	i.TopicsByID[t.ID] = t
}

// setPartition replaces partition p.ID of topic t (in i) by p, in a copy
// of t and its partition slice, or in t itself when this batch made that
// copy: a batch of changes to one topic's partitions (a broker rejoining
// every ISR of a topic of 100k partitions) copies the partition slice
// once, not once per record. Like withTopic, it is an apply function's
// last step.
func (i *Image) setPartition(t *Topic, p *Partition) {
	var d countDelta
	d.partition(t.Partitions[p.ID], p)
	i.replicas = i.replicas.plus(&d)
	if i.batch != nil && i.batch.topics[t] {
		t.Partitions[p.ID] = p
		return
	}
	nt := *t
	nt.Partitions = slices.Clone(t.Partitions)
	nt.Partitions[p.ID] = p
	if i.batch != nil {
		if i.batch.topics == nil {
			i.batch.topics = map[*Topic]bool{}
		}
		i.batch.topics[&nt] = true
	}
	i.ownTopicMaps()
	i.Topics[nt.Name] = &nt
	i.TopicsByID[nt.ID] = &nt
}

// withoutTopic removes t from the topic maps (ownTopicMaps).
func (i *Image) withoutTopic(t *Topic) {
	var d countDelta
	d.diff(t, nil)
	i.replicas = i.replicas.plus(&d)
	i.names = &sortedNames{}
	i.ownTopicMaps()
	delete(i.Topics, t.Name)
	delete(i.TopicsByID, t.ID)
}

// countDelta is a change of replicaCounts.
type countDelta struct {
	total     int64
	perBroker map[int32]int64
}

// diff adds the change from topic old to topic next (either may be nil):
// their partition counts, and the replicas of the partitions that are not
// the same pointer with the same replicas in both.
func (d *countDelta) diff(old, next *Topic) {
	var op, np []*Partition
	if old != nil {
		op = old.Partitions
	}
	if next != nil {
		np = next.Partitions
	}
	d.total += int64(len(np) - len(op))
	for j := range max(len(op), len(np)) {
		var a, b *Partition
		if j < len(op) {
			a = op[j]
		}
		if j < len(np) {
			b = np[j]
		}
		d.partition(a, b)
	}
}

// partition adds the change of replicas from a to b (either may be nil).
func (d *countDelta) partition(a, b *Partition) {
	if a == b || a != nil && b != nil && slices.Equal(a.Replicas, b.Replicas) {
		return
	}
	if d.perBroker == nil {
		d.perBroker = map[int32]int64{}
	}
	if a != nil {
		for _, r := range a.Replicas {
			d.perBroker[r]--
		}
	}
	if b != nil {
		for _, r := range b.Replicas {
			d.perBroker[r]++
		}
	}
}

// plus returns c changed by d: c itself when d changes nothing, nil when c
// is nil (an image built by hand has no counts to keep).
func (c *replicaCounts) plus(d *countDelta) *replicaCounts {
	if c == nil {
		return nil
	}
	changed := d.total != 0
	for _, k := range d.perBroker {
		changed = changed || k != 0
	}
	if !changed {
		return c
	}
	n := &replicaCounts{total: c.total + d.total, perBroker: maps.Clone(c.perBroker)}
	for b, k := range d.perBroker {
		if v := n.perBroker[b] + k; v != 0 {
			n.perBroker[b] = v
		} else {
			delete(n.perBroker, b)
		}
	}
	return n
}

// withBroker replaces (or adds) b in a copy of the broker map.
func (i *Image) withBroker(b *Broker) {
	i.Brokers = maps.Clone(i.Brokers)
	i.Brokers[b.ID] = b
}

// updatePartitions replaces every partition p of every topic t for which
// f(t, p) returns non-nil by that result, in copies of the topics and the
// topic maps (ownTopicMaps, once). f sees each partition once and must not depend
// on the order of topics.
func (i *Image) updatePartitions(f func(t *Topic, p *Partition) *Partition) {
	var changed []*Topic
	var d countDelta
	for _, t := range i.Topics {
		var parts []*Partition
		for j, p := range t.Partitions {
			if n := f(t, p); n != nil {
				if parts == nil {
					parts = slices.Clone(t.Partitions)
				}
				parts[j] = n
				d.partition(p, n)
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
	i.replicas = i.replicas.plus(&d)
	i.ownTopicMaps()
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
	img.reindex()
	return img
}
