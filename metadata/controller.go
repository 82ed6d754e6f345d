package metadata

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	mrand "math/rand/v2"
	"slices"

	"github.com/hashicorp/raft"
)

// The controller operations below run on the active controller (raft
// leader) only and return ErrNotController elsewhere; forwarding to the
// controller comes later. Each validates against the current image,
// proposes records through raft, and returns once they are committed and
// applied to this node's image. The FSM re-checks everything that depends
// on state (a topic created concurrently, a stale epoch), so concurrent
// operations cannot corrupt the image; the loser gets the FSM's error.

// BrokerRegistration is what a broker sends to register itself.
type BrokerRegistration struct {
	ID            int32
	IncarnationID string // changes on every start of the broker process
	Endpoints     []Endpoint
	Rack          string
}

// TopicSpec is one topic of a CreateTopics request.
type TopicSpec struct {
	Name              string
	NumPartitions     int32 // -1 = Config.DefaultNumPartitions
	ReplicationFactor int16 // -1 = Config.DefaultReplicationFactor
	// Assignments is an explicit replica assignment (partition -> brokers);
	// it overrides the two counts, which must then be -1.
	Assignments map[int32][]int32
	Configs     map[string]string
}

// PartitionChange is a new leader and ISR for a partition, decided on the
// partition's current LeaderEpoch and PartitionEpoch (Kafka's AlterPartition).
type PartitionChange struct {
	Topic          string
	Partition      int32
	Leader         int32 // NoLeader for none
	ISR            []int32
	LeaderEpoch    int32
	PartitionEpoch int32
}

// ProducerIDBlockSize is the number of producer ids AllocateProducerIDs
// hands out at once.
const ProducerIDBlockSize = 1000

// RegisterBroker registers a broker, or updates its registration. A new
// IncarnationID gives the broker a new epoch (the raft index of the record).
// Brokers are registered unfenced for now.
func (s *Store) RegisterBroker(ctx context.Context, reg BrokerRegistration) error {
	if reg.ID < 0 {
		return fmt.Errorf("metadata: register broker: id %d must be >= 0", reg.ID)
	}
	if b, ok := s.Image().Brokers[reg.ID]; ok && s.IsController() && b.IncarnationID == reg.IncarnationID &&
		b.Rack == reg.Rack && slices.Equal(b.Endpoints, reg.Endpoints) {
		return nil // already registered exactly so
	}
	_, err := s.propose(ctx, recRegisterBroker, &registerBrokerRecord{
		BrokerID:      reg.ID,
		IncarnationID: reg.IncarnationID,
		Endpoints:     reg.Endpoints,
		Rack:          reg.Rack,
	})
	if err != nil {
		return fmt.Errorf("register broker %d: %w", reg.ID, err)
	}
	return nil
}

// FenceBroker fences a broker at its current epoch.
func (s *Store) FenceBroker(ctx context.Context, id int32, epoch int64) error {
	_, err := s.propose(ctx, recFenceBroker, &fenceBrokerRecord{BrokerID: id, BrokerEpoch: epoch})
	if err != nil {
		return fmt.Errorf("fence broker %d: %w", id, err)
	}
	return nil
}

// UnfenceBroker unfences a broker at its current epoch.
func (s *Store) UnfenceBroker(ctx context.Context, id int32, epoch int64) error {
	_, err := s.propose(ctx, recUnfenceBroker, &fenceBrokerRecord{BrokerID: id, BrokerEpoch: epoch})
	if err != nil {
		return fmt.Errorf("unfence broker %d: %w", id, err)
	}
	return nil
}

// CreateTopics creates topics; it returns one result per spec, nil for
// success. With validateOnly it checks and proposes nothing.
func (s *Store) CreateTopics(ctx context.Context, specs []TopicSpec, validateOnly bool) []error {
	errs := make([]error, len(specs))
	if !s.IsController() {
		for i := range errs {
			errs[i] = ErrNotController
		}
		return errs
	}
	count := map[string]int{}
	for _, sp := range specs {
		count[sp.Name]++
	}
	img := s.Image()
	pl := planner{
		img:        img,
		partitions: s.cfg.DefaultNumPartitions,
		rf:         s.cfg.DefaultReplicationFactor,
		validate:   s.cfg.ValidateTopicConfig,
	}
	futures := make([]raft.ApplyFuture, len(specs))
	for i, sp := range specs {
		if count[sp.Name] > 1 {
			errs[i] = fmt.Errorf("%w: %q", ErrDuplicateTopic, sp.Name)
			continue
		}
		rec, err := pl.plan(sp, randomUUID(img), mrand.Int())
		if err != nil || validateOnly {
			errs[i] = err
			continue
		}
		futures[i], errs[i] = s.start(ctx, recCreateTopic, rec)
	}
	for i, f := range futures {
		if f != nil {
			_, errs[i] = s.finish(ctx, f)
		}
	}
	return errs
}

// DeleteTopics deletes topics by name; one result per name.
func (s *Store) DeleteTopics(ctx context.Context, names []string) []error {
	errs := make([]error, len(names))
	futures := make([]raft.ApplyFuture, len(names))
	count := map[string]int{}
	for _, n := range names {
		count[n]++
	}
	img := s.Image()
	for i, name := range names {
		t, ok := img.Topics[name]
		switch {
		case !s.IsController():
			errs[i] = ErrNotController
		case count[name] > 1:
			errs[i] = fmt.Errorf("%w: %q", ErrDuplicateTopic, name)
		case !ok:
			errs[i] = fmt.Errorf("%w: %q", ErrUnknownTopic, name)
		default:
			futures[i], errs[i] = s.start(ctx, recDeleteTopic, &deleteTopicRecord{TopicID: t.ID})
		}
	}
	for i, f := range futures {
		if f != nil {
			_, errs[i] = s.finish(ctx, f)
		}
	}
	return errs
}

// AllocateProducerIDs allocates the next block of ProducerIDBlockSize
// producer ids for a broker.
func (s *Store) AllocateProducerIDs(ctx context.Context, brokerID int32) (first int64, count int64, err error) {
	s.pidMu.Lock()
	defer s.pidMu.Unlock()
	for attempt := 0; ; attempt++ {
		rec := &producerIDBlockRecord{
			BrokerID:        brokerID,
			FirstProducerID: s.Image().NextProducerID,
			Count:           ProducerIDBlockSize,
		}
		_, err = s.propose(ctx, recProducerIDBlock, rec)
		if err == nil {
			return rec.FirstProducerID, rec.Count, nil
		}
		if !errors.Is(err, errStaleProducerIDBlock) || attempt == 3 {
			return 0, 0, fmt.Errorf("allocate producer ids for broker %d: %w", brokerID, err)
		}
		// Another block was committed first (or this node's image lags
		// after an election): catch up and retry.
		if err := s.wait(ctx, s.raft.Barrier(enqueueTimeout(ctx))); err != nil {
			return 0, 0, fmt.Errorf("allocate producer ids for broker %d: %w", brokerID, err)
		}
	}
}

// AlterTopicConfigs sets and removes config overrides of a topic. The
// resulting overrides are checked with Config.ValidateTopicConfig. A key
// both set and removed ends up set.
func (s *Store) AlterTopicConfigs(ctx context.Context, topic string, set map[string]string, remove []string) error {
	t, ok := s.Image().Topics[topic]
	if !ok {
		return fmt.Errorf("alter configs: %w: %q", ErrUnknownTopic, topic)
	}
	merged := maps.Clone(t.Configs)
	if merged == nil {
		merged = map[string]string{}
	}
	for _, k := range remove {
		delete(merged, k)
	}
	maps.Copy(merged, set)
	if v := s.cfg.ValidateTopicConfig; v != nil {
		if err := v(merged); err != nil {
			return fmt.Errorf("alter configs of %q: %w: %w", topic, ErrInvalidConfig, err)
		}
	}
	_, err := s.propose(ctx, recConfigChange, &configChangeRecord{
		TopicID: t.ID,
		Set:     set,
		Remove:  slices.Sorted(slices.Values(remove)),
	})
	if err != nil {
		return fmt.Errorf("alter configs of %q: %w", topic, err)
	}
	return nil
}

// ChangePartition sets the leader and ISR of a partition. It fails with
// ErrStalePartitionEpoch or ErrFencedLeaderEpoch when c was decided on
// epochs that are no longer current.
func (s *Store) ChangePartition(ctx context.Context, c PartitionChange) error {
	t, ok := s.Image().Topics[c.Topic]
	if !ok {
		return fmt.Errorf("change partition: %w: %q", ErrUnknownTopic, c.Topic)
	}
	_, err := s.propose(ctx, recPartitionChange, &partitionChangeRecord{
		TopicID:        t.ID,
		Partition:      c.Partition,
		Leader:         c.Leader,
		ISR:            c.ISR,
		LeaderEpoch:    c.LeaderEpoch,
		PartitionEpoch: c.PartitionEpoch,
	})
	if err != nil {
		return fmt.Errorf("change partition %s-%d: %w", c.Topic, c.Partition, err)
	}
	return nil
}

// planner turns a TopicSpec into a CreateTopic record against an image.
type planner struct {
	img        *Image
	partitions int32 // default number of partitions
	rf         int16 // default replication factor
	validate   func(map[string]string) error
}

// plan validates sp and places its replicas. id is the new topic's id and
// start the random starting position of round-robin placement.
func (pl planner) plan(sp TopicSpec, id [16]byte, start int) (*createTopicRecord, error) {
	if err := ValidateTopicName(sp.Name); err != nil {
		return nil, err
	}
	if _, ok := pl.img.Topics[sp.Name]; ok {
		return nil, fmt.Errorf("%w: %q", ErrTopicExists, sp.Name)
	}
	if err := checkTopicCollision(pl.img, sp.Name); err != nil {
		return nil, err
	}
	var assignment [][]int32
	if len(sp.Assignments) > 0 {
		if sp.NumPartitions != -1 || sp.ReplicationFactor != -1 {
			return nil, fmt.Errorf("%w: %q: with an explicit assignment, partitions and replication factor must be -1",
				ErrInvalidReplicaAssignment, sp.Name)
		}
		a, err := checkAssignment(pl.img, sp.Assignments)
		if err != nil {
			return nil, fmt.Errorf("topic %q: %w", sp.Name, err)
		}
		assignment = a
	} else {
		n, rf := sp.NumPartitions, sp.ReplicationFactor
		if n == -1 {
			n = pl.partitions
		}
		if rf == -1 {
			rf = pl.rf
		}
		if n < 1 || n > MaxPartitions {
			return nil, fmt.Errorf("%w: %q: %d partitions (must be 1..%d)", ErrInvalidPartitions, sp.Name, n, MaxPartitions)
		}
		brokers := pl.img.UnfencedBrokerIDs()
		if rf < 1 || int(rf) > len(brokers) {
			return nil, fmt.Errorf("%w: %q: replication factor %d, %d unfenced brokers",
				ErrInvalidReplicationFactor, sp.Name, rf, len(brokers))
		}
		assignment = placeReplicas(brokers, n, rf, start%len(brokers))
	}
	if pl.validate != nil && len(sp.Configs) > 0 {
		if err := pl.validate(sp.Configs); err != nil {
			return nil, fmt.Errorf("topic %q: %w: %w", sp.Name, ErrInvalidConfig, err)
		}
	}
	rec := &createTopicRecord{
		Name:       sp.Name,
		TopicID:    id,
		Partitions: make([]partitionRecord, len(assignment)),
		Configs:    sp.Configs,
	}
	for p, replicas := range assignment {
		rec.Partitions[p] = partitionRecord{
			Partition: int32(p),
			Replicas:  replicas,
			ISR:       slices.Clone(replicas), // all replicas: every log is empty
			Leader:    leaderOf(pl.img, replicas),
		}
	}
	return rec, nil
}

// randomUUID returns a random version-4 UUID that Kafka would accept as a
// topic id: not zero, not Kafka's metadata topic id, not printed with a
// leading '-', and not an id of a topic in img (if img is not nil).
func randomUUID(img *Image) [16]byte {
	for {
		var u [16]byte
		rand.Read(u[:])
		u[6] = u[6]&0x0f | 0x40 // version 4
		u[8] = u[8]&0x3f | 0x80 // IETF variant
		if u == ([16]byte{}) || u == ([16]byte{15: 1}) || encodeUUID(u)[0] == '-' {
			continue
		}
		if img != nil {
			if _, taken := img.TopicsByID[u]; taken {
				continue
			}
		}
		return u
	}
}

// encodeUUID prints a UUID as Kafka does: 22 characters of unpadded
// base64url.
func encodeUUID(u [16]byte) string { return base64.RawURLEncoding.EncodeToString(u[:]) }
