package metadata

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/kbroker/kbroker/metadata/decisions"
	"github.com/kbroker/kbroker/metadata/features"
)

// errStaleProducerIDBlock: a ProducerIDBlock record whose first id is not
// the image's NextProducerID (another block was committed first).
var errStaleProducerIDBlock = errors.New("metadata: stale producer id block")

// applyEntry applies one log entry at raft index to img and returns the
// next image and the result for the proposer: nil, an error (the record was
// rejected; the image only moves its Offset), or for a ProducerIDBlock the
// first producer id.
//
// applyEntry is a pure function of (img, index, data): no clock, no
// randomness, no dependence on map iteration order. Every replica computes
// the same image from the same log.
func applyEntry(img *Image, index uint64, data []byte) (*Image, any) {
	next := img.next(index)
	t, p, err := decodeRecord(data)
	if err != nil {
		return next, err
	}
	switch r := p.(type) {
	case *registerBrokerRecord:
		err = applyRegisterBroker(next, index, r)
	case *fenceBrokerRecord:
		err = applyFence(next, r, t == recFenceBroker)
	case *createTopicRecord:
		err = applyCreateTopic(next, r)
	case *deleteTopicRecord:
		err = applyDeleteTopic(next, r)
	case *partitionChangeRecord:
		err = applyPartitionChange(next, r)
	case *partitionChangeBatchRecord:
		var errs []error
		if errs, err = applyPartitionChangeBatch(next, r); err == nil {
			return next, errs
		}
	case *configChangeRecord:
		err = applyConfigChange(next, r)
	case *producerIDBlockRecord:
		if err = applyProducerIDBlock(next, r); err == nil {
			return next, r.FirstProducerID
		}
	case *setClusterIDRecord:
		if err = applySetClusterID(next, r); err == nil && r.Features != nil {
			next.features, next.featuresEpoch = r.Features, int64(index)
		}
	case *createPartitionsRecord:
		err = applyCreatePartitions(next, r)
	case *accessControlEntryRecord:
		err = applyACL(next, r)
	case *removeAccessControlEntryRecord:
		err = applyRemoveACL(next, r)
	case *userScramCredentialRecord:
		err = applyScram(next, r)
	case *removeUserScramCredentialRecord:
		err = applyRemoveScram(next, r)
	case *alterReassignmentRecord:
		err = applyAlterReassignment(next, r)
	case *clientQuotaRecord:
		err = applyClientQuota(next, r)
	case *unregisterBrokerRecord:
		err = applyUnregisterBroker(next, r)
	case *brokerConfigChangeRecord:
		err = applyBrokerConfigChange(next, r)
	case *groupConfigChangeRecord:
		err = applyGroupConfigChange(next, r)
	case *featureLevelRecord:
		err = applyFeatureLevel(next, index, r)
	case *DelegationToken:
		err = applyDelegationToken(next, r)
	case *removeDelegationTokenRecord:
		err = applyRemoveDelegationToken(next, r)
	case *remoteSegmentRecord:
		err = applyRemoteSegment(next, r)
	}
	if err != nil {
		// Rejected: nothing but the offset changes.
		return img.next(index), err
	}
	return next, nil
}

func applyRegisterBroker(img *Image, index uint64, r *registerBrokerRecord) error {
	if r.BrokerID < 0 {
		return fmt.Errorf("%w: broker id %d", ErrUnknownBroker, r.BrokerID)
	}
	if err := features.Check(img.Features(), r.Features); err != nil {
		return fmt.Errorf("broker %d: %w", r.BrokerID, err)
	}
	b := &Broker{
		ID:            r.BrokerID,
		IncarnationID: r.IncarnationID,
		Epoch:         int64(index),
		Endpoints:     slices.Clone(r.Endpoints),
		Rack:          r.Rack,

		PartitionCapacity: r.PartitionCapacity,
		Features:          r.Features,
	}
	old, ok := img.Brokers[r.BrokerID]
	switch {
	case ok && old.IncarnationID == r.IncarnationID:
		// The same process registering again (a retry, or new endpoints):
		// keep its epoch and fencing state.
		b.Epoch = old.Epoch
		b.Fenced = old.Fenced
	case ok && !old.Fenced:
		// A new process replaces one that was never fenced (it restarted
		// faster than failure detection). The old incarnation's
		// leaderships and ISR memberships end here, as a clean fence would
		// end them: the new process may hold less than the old one
		// acknowledged, so it must not carry on leading in the old leader
		// epoch; it rejoins as a follower, truncating by leader epoch.
		gone := *old
		gone.Fenced = true
		img.withBroker(&gone)
		alive := aliveIn(img)
		img.updatePartitions(func(_ *Topic, p *Partition) *Partition {
			return decisions.Fence(p, r.BrokerID, alive, false)
		})
	}
	img.withBroker(b)
	if !b.Fenced {
		// A new incarnation is unfenced: offline partitions it is the
		// last ISR member of come back with it.
		electOnUnfence(img, b.ID)
	}
	return nil
}

func applyFence(img *Image, r *fenceBrokerRecord, fenced bool) error {
	old, ok := img.Brokers[r.BrokerID]
	if !ok {
		return fmt.Errorf("%w: %d", ErrUnknownBroker, r.BrokerID)
	}
	if old.Epoch != r.BrokerEpoch {
		return fmt.Errorf("%w: broker %d has epoch %d, record has %d", ErrStaleBrokerEpoch, r.BrokerID, old.Epoch, r.BrokerEpoch)
	}
	if old.Fenced == fenced {
		return nil
	}
	b := *old
	b.Fenced = fenced
	img.withBroker(&b)
	if fenced {
		unclean := map[[16]byte]bool{}
		for _, id := range r.UncleanTopics {
			unclean[id] = true
		}
		alive := aliveIn(img)
		img.updatePartitions(func(t *Topic, p *Partition) *Partition {
			return decisions.Fence(p, r.BrokerID, alive, unclean[t.ID])
		})
	} else {
		electOnUnfence(img, r.BrokerID)
	}
	return nil
}

// electOnUnfence elects leaders for the offline partitions whose ISR holds
// a broker that just became alive.
func electOnUnfence(img *Image, broker int32) {
	alive := aliveIn(img)
	img.updatePartitions(func(_ *Topic, p *Partition) *Partition {
		return decisions.Unfence(p, broker, alive)
	})
}

func applyCreatePartitions(img *Image, r *createPartitionsRecord) error {
	old, ok := img.TopicsByID[r.TopicID]
	if !ok {
		return fmt.Errorf("%w: id %x", ErrUnknownTopic, r.TopicID)
	}
	if len(r.Partitions) == 0 || len(old.Partitions)+len(r.Partitions) > MaxPartitions {
		return fmt.Errorf("%w: %q: adding %d partitions to %d", ErrInvalidPartitions, old.Name, len(r.Partitions), len(old.Partitions))
	}
	if r.Limits != nil {
		if err := countPartitions(img).check(r.Limits, fmt.Sprintf("%q", old.Name), replicaLists(r.Partitions)); err != nil {
			return err
		}
	}
	t := *old
	t.Partitions = slices.Clone(old.Partitions)
	for _, pr := range r.Partitions {
		if int(pr.Partition) != len(t.Partitions) {
			return fmt.Errorf("%w: %q partition %d at position %d", ErrInvalidReplicaAssignment, old.Name, pr.Partition, len(t.Partitions))
		}
		if err := checkReplicas(pr.Replicas); err != nil {
			return fmt.Errorf("%q partition %d: %w", old.Name, pr.Partition, err)
		}
		if err := decisions.CheckISR(pr.Replicas, pr.Leader, pr.ISR); err != nil {
			return fmt.Errorf("%q partition %d: %w", old.Name, pr.Partition, err)
		}
		t.Partitions = append(t.Partitions, &Partition{
			ID:       pr.Partition,
			Replicas: slices.Clone(pr.Replicas),
			ISR:      slices.Clone(pr.ISR),
			Leader:   pr.Leader,
		})
	}
	img.withTopic(&t)
	return nil
}

func applyCreateTopic(img *Image, r *createTopicRecord) error {
	if err := ValidateTopicName(r.Name); err != nil {
		return err
	}
	if _, ok := img.Topics[r.Name]; ok {
		return fmt.Errorf("%w: %q", ErrTopicExists, r.Name)
	}
	if err := checkTopicCollision(img, r.Name); err != nil {
		return err
	}
	if _, ok := img.TopicsByID[r.TopicID]; ok || r.TopicID == ([16]byte{}) {
		return fmt.Errorf("%w: topic id of %q is zero or taken", ErrInvalidTopic, r.Name)
	}
	if len(r.Partitions) == 0 {
		return fmt.Errorf("%w: %q has no partitions", ErrInvalidPartitions, r.Name)
	}
	if r.Limits != nil {
		if err := countPartitions(img).check(r.Limits, fmt.Sprintf("%q", r.Name), replicaLists(r.Partitions)); err != nil {
			return err
		}
	}
	t := &Topic{
		Name:       r.Name,
		ID:         r.TopicID,
		Partitions: make([]*Partition, len(r.Partitions)),
		Configs:    maps.Clone(r.Configs),
	}
	if t.Configs == nil {
		t.Configs = map[string]string{}
	}
	for i, pr := range r.Partitions {
		if pr.Partition != int32(i) {
			return fmt.Errorf("%w: %q partition %d at position %d", ErrInvalidReplicaAssignment, r.Name, pr.Partition, i)
		}
		if err := checkReplicas(pr.Replicas); err != nil {
			return fmt.Errorf("%q partition %d: %w", r.Name, i, err)
		}
		if err := decisions.CheckISR(pr.Replicas, pr.Leader, pr.ISR); err != nil {
			return fmt.Errorf("%q partition %d: %w", r.Name, i, err)
		}
		t.Partitions[i] = &Partition{
			ID:       pr.Partition,
			Replicas: slices.Clone(pr.Replicas),
			ISR:      slices.Clone(pr.ISR),
			Leader:   pr.Leader,
		}
	}
	img.withTopic(t)
	return nil
}

func applyDeleteTopic(img *Image, r *deleteTopicRecord) error {
	t, ok := img.TopicsByID[r.TopicID]
	if !ok {
		return fmt.Errorf("%w: id %x", ErrUnknownTopic, r.TopicID)
	}
	img.withoutTopic(t)
	img.withoutRemoteTopic(t.ID)
	return nil
}

func applyPartitionChange(img *Image, r *partitionChangeRecord) error {
	old, ok := img.TopicsByID[r.TopicID]
	if !ok {
		return fmt.Errorf("%w: id %x", ErrUnknownTopic, r.TopicID)
	}
	if r.Partition < 0 || int(r.Partition) >= len(old.Partitions) {
		return fmt.Errorf("%w: %q has no partition %d", ErrUnknownTopic, old.Name, r.Partition)
	}
	cur := old.Partitions[r.Partition]
	p, err := decisions.ChangePartition(cur, decisions.Change{Leader: r.Leader, ISR: r.ISR,
		LeaderEpoch: r.LeaderEpoch, PartitionEpoch: r.PartitionEpoch}, aliveIn(img))
	if err != nil {
		return fmt.Errorf("%s-%d: %w", old.Name, r.Partition, err)
	}
	img.setPartition(old, withReassignment(img, cur, p))
	return nil
}

// checkReplicas checks that a replica list is a non-empty set.
func checkReplicas(replicas []int32) error {
	if len(replicas) == 0 {
		return fmt.Errorf("%w: no replicas", ErrInvalidReplicaAssignment)
	}
	for i, id := range replicas {
		if slices.Contains(replicas[:i], id) {
			return fmt.Errorf("%w: broker %d listed twice", ErrInvalidReplicaAssignment, id)
		}
	}
	return nil
}

func applyConfigChange(img *Image, r *configChangeRecord) error {
	if r.Cluster {
		c := maps.Clone(img.ClusterConfigs)
		if c == nil {
			c = map[string]string{}
		}
		for _, k := range r.Remove {
			delete(c, k)
		}
		maps.Copy(c, r.Set)
		img.ClusterConfigs = c
		return nil
	}
	old, ok := img.TopicsByID[r.TopicID]
	if !ok {
		return fmt.Errorf("%w: id %x", ErrUnknownTopic, r.TopicID)
	}
	t := *old
	t.Configs = maps.Clone(old.Configs)
	if t.Configs == nil {
		t.Configs = map[string]string{}
	}
	for _, k := range r.Remove {
		delete(t.Configs, k)
	}
	maps.Copy(t.Configs, r.Set)
	img.withTopic(&t)
	return nil
}

func applyProducerIDBlock(img *Image, r *producerIDBlockRecord) error {
	if r.FirstProducerID != img.NextProducerID {
		return fmt.Errorf("%w: next producer id is %d, block starts at %d", errStaleProducerIDBlock, img.NextProducerID, r.FirstProducerID)
	}
	if r.Count <= 0 || r.FirstProducerID > maxProducerID-r.Count {
		return fmt.Errorf("metadata: producer id block [%d, +%d) out of range", r.FirstProducerID, r.Count)
	}
	img.NextProducerID = r.FirstProducerID + r.Count
	return nil
}

// maxProducerID bounds the producer id space (Kafka's ids are int64 >= 0).
const maxProducerID = int64(1<<63 - 1)

func applySetClusterID(img *Image, r *setClusterIDRecord) error {
	if r.ClusterID == "" {
		return fmt.Errorf("%w: empty cluster id", ErrClusterIDSet)
	}
	if img.ClusterID != "" && img.ClusterID != r.ClusterID {
		return fmt.Errorf("%w: %q", ErrClusterIDSet, img.ClusterID)
	}
	if img.ClusterID == "" {
		for _, c := range r.Scram {
			if err := applyScram(img, c); err != nil {
				return err
			}
		}
	}
	img.ClusterID = r.ClusterID
	return nil
}

// aliveIn reports whether a broker is registered and unfenced in img.
func aliveIn(img *Image) func(int32) bool {
	return func(id int32) bool {
		b, ok := img.Brokers[id]
		return ok && !b.Fenced
	}
}
