package metadata

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	mrand "math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/raft"
	"github.com/kbroker/kbroker/metadata/decisions"
	"github.com/kbroker/kbroker/metadata/features"
)

// The controller operations below run on the active controller (raft
// leader): a public method calls call with the operation's op (ops.go),
// which runs the operation's implementation (the lower-case method) here
// when this node is the leader, or forwards it through the controller RPC
// to the leader, which runs the same implementation. Each implementation
// validates against the current image, proposes records through raft, and
// returns once they are committed and applied to the leader's image. The FSM
// re-checks everything that depends on state (a topic created
// concurrently, a stale epoch), so concurrent operations cannot corrupt
// the image; the loser gets the FSM's error.

// BrokerRegistration is what a broker sends to register itself.
type BrokerRegistration struct {
	ID            int32
	IncarnationID string // changes on every start of the broker process
	Endpoints     []Endpoint
	Rack          string
	// PartitionCapacity is how many partition replicas the broker can
	// host (its file-descriptor budget, capped by max.broker.partitions);
	// 0 is not reported. Placement refuses to exceed it (limits.go).
	PartitionCapacity int64
	// Features are the levels the broker supports (Kafka's
	// BrokerRegistrationRequest Features); RegisterBroker fills in this
	// build's when nil.
	Features map[string]features.Range
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
// IncarnationID gives the broker a new epoch (the raft index of the
// record) and unfences it; offline partitions whose ISR holds it elect it.
func (s *Store) RegisterBroker(ctx context.Context, reg BrokerRegistration) error {
	if reg.ID < 0 {
		return fmt.Errorf("metadata: register broker: id %d must be >= 0", reg.ID)
	}
	if reg.Features == nil {
		reg.Features = features.Supported()
	}
	s.registration.Store(&reg)
	_, err := call(ctx, s, opRegisterBroker, reg)
	return err
}

var opRegisterBroker = defineOp("RegisterBroker",
	func(_ *Image, r BrokerRegistration) int32 { return r.ID },
	func(s *Store, ctx context.Context, r BrokerRegistration) (none, error) {
		return none{}, s.registerBroker(ctx, r)
	})

func (s *Store) registerBroker(ctx context.Context, reg BrokerRegistration) error {
	if reg.ID < 0 {
		return fmt.Errorf("metadata: register broker: id %d must be >= 0", reg.ID)
	}
	// Kafka refuses a broker that does not support a finalized level.
	if err := features.Check(s.Image().Features(), reg.Features); err != nil {
		return fmt.Errorf("register broker %d: %w", reg.ID, err)
	}
	s.sessions.beat(reg.ID, time.Now()) // a registration starts a session
	if b, ok := s.Image().Brokers[reg.ID]; ok && b.IncarnationID == reg.IncarnationID &&
		b.Rack == reg.Rack && slices.Equal(b.Endpoints, reg.Endpoints) &&
		b.PartitionCapacity == reg.PartitionCapacity && maps.Equal(b.Features, reg.Features) {
		return nil // already registered exactly so
	}
	_, err := s.propose(ctx, recRegisterBroker, &registerBrokerRecord{
		BrokerID:      reg.ID,
		IncarnationID: reg.IncarnationID,
		Endpoints:     reg.Endpoints,
		Rack:          reg.Rack,

		PartitionCapacity: reg.PartitionCapacity,
		Features:          reg.Features,
	})
	if err != nil {
		return fmt.Errorf("register broker %d: %w", reg.ID, err)
	}
	return nil
}

// brokerAtEpoch names a registration of a broker.
type brokerAtEpoch struct {
	BrokerID int32 `json:"brokerId"`
	Epoch    int64 `json:"epoch"`
}

// FenceBroker fences a broker at its current epoch: every partition it
// leads elects a new leader (decisions.ElectLeader; unclean only where the topic's
// effective unclean.leader.election.enable is true), and it leaves every
// ISR it is not the last member of.
func (s *Store) FenceBroker(ctx context.Context, id int32, epoch int64) error {
	_, err := call(ctx, s, opFenceBroker, brokerAtEpoch{id, epoch})
	return err
}

var opFenceBroker = defineOp("FenceBroker", nil,
	func(s *Store, ctx context.Context, r brokerAtEpoch) (none, error) {
		return none{}, s.fenceBroker(ctx, r.BrokerID, r.Epoch, true, false)
	})

// UnfenceBroker unfences a broker at its current epoch; offline partitions
// whose ISR holds it elect a leader again.
func (s *Store) UnfenceBroker(ctx context.Context, id int32, epoch int64) error {
	_, err := call(ctx, s, opUnfenceBroker, brokerAtEpoch{id, epoch})
	return err
}

var opUnfenceBroker = defineOp("UnfenceBroker", nil,
	func(s *Store, ctx context.Context, r brokerAtEpoch) (none, error) {
		return none{}, s.fenceBroker(ctx, r.BrokerID, r.Epoch, false, false)
	})

// actsForBroker binds a request about a broker's own registration to that
// broker.
func actsForBroker(_ *Image, r brokerAtEpoch) int32 { return r.BrokerID }

// fenceBroker proposes a FenceBroker record (fenced) or an UnfenceBroker
// record. A fence carries the topics that allow unclean election, decided
// here from the topic configs and Config.UncleanLeaderElection unless
// clean is set.
func (s *Store) fenceBroker(ctx context.Context, id int32, epoch int64, fenced, clean bool) error {
	typ, verb := recUnfenceBroker, "unfence"
	s.placeMu.Lock()
	defer s.placeMu.Unlock()
	rec := &fenceBrokerRecord{BrokerID: id, BrokerEpoch: epoch}
	if fenced {
		typ, verb = recFenceBroker, "fence"
		if !clean {
			rec.UncleanTopics = s.uncleanTopics(s.Image(), id)
		}
	}
	if _, err := s.propose(ctx, typ, rec); err != nil {
		return fmt.Errorf("%s broker %d: %w", verb, id, err)
	}
	return nil
}

// uncleanTopics lists, sorted, the ids of the topics with a replica on
// broker whose effective unclean.leader.election.enable is true.
func (s *Store) uncleanTopics(img *Image, broker int32) [][16]byte {
	var ids [][16]byte
	for _, t := range img.Topics {
		unclean := s.cfg.UncleanLeaderElection
		if v, ok := t.Configs["unclean.leader.election.enable"]; ok {
			unclean = strings.EqualFold(strings.TrimSpace(v), "true")
		}
		if !unclean {
			continue
		}
		for _, p := range t.Partitions {
			if slices.Contains(p.Replicas, broker) {
				ids = append(ids, t.ID)
				break
			}
		}
	}
	slices.SortFunc(ids, func(a, b [16]byte) int { return bytes.Compare(a[:], b[:]) })
	return ids
}

// Heartbeat records that a broker is alive at the given epoch, on the
// active controller (forwarded). A fenced broker whose epoch is current is
// unfenced. It reports whether the broker is fenced afterwards; a stale
// epoch fails with ErrStaleBrokerEpoch, an unregistered broker with
// ErrUnknownBroker.
func (s *Store) Heartbeat(ctx context.Context, brokerID int32, brokerEpoch int64) (fenced bool, err error) {
	res, err := s.BrokerHeartbeat(ctx, brokerID, brokerEpoch)
	return res.Fenced, err
}

// BrokerHeartbeat is Heartbeat, answering also the active controller's
// image offset after it: a broker must not act on its session until its
// own image has caught up with it, since the metadata it has not applied
// yet may have moved its leaderships away (it was fenced while cut off).
func (s *Store) BrokerHeartbeat(ctx context.Context, brokerID int32, brokerEpoch int64) (HeartbeatResult, error) {
	res, err := call(ctx, s, opHeartbeat, brokerAtEpoch{brokerID, brokerEpoch})
	// A controller before feature levels registered this incarnation
	// without its ranges (a rolling upgrade): register them again.
	reg, b := s.registration.Load(), s.Image().Brokers[brokerID]
	if err == nil && reg != nil && b != nil && b.Features == nil && b.IncarnationID == reg.IncarnationID {
		_ = s.RegisterBroker(ctx, *reg) // else at the next heartbeat
	}
	return HeartbeatResult{Fenced: res.Fenced, MetadataOffset: res.Offset}, err
}

// HeartbeatResult is the answer to a broker heartbeat.
type HeartbeatResult struct {
	Fenced bool
	// MetadataOffset is the controller's image offset after the
	// heartbeat (0 from a controller that does not say).
	MetadataOffset uint64
}

var opHeartbeat = defineOp("Heartbeat", actsForBroker, (*Store).heartbeat)

type heartbeatResult struct {
	Fenced bool   `json:"fenced"`
	Offset uint64 `json:"offset,omitempty"`
}

func (s *Store) heartbeat(ctx context.Context, r brokerAtEpoch) (heartbeatResult, error) {
	b, err := s.currentBroker(r.BrokerID, r.Epoch)
	if err != nil {
		return heartbeatResult{}, err
	}
	s.sessions.beat(r.BrokerID, time.Now())
	if b.Fenced && !s.sessions.shuttingDown(r.BrokerID, r.Epoch) {
		if err := s.fenceBroker(ctx, r.BrokerID, r.Epoch, false, false); err != nil {
			return heartbeatResult{}, err
		}
	}
	img := s.Image()
	b, ok := img.Brokers[r.BrokerID]
	return heartbeatResult{Fenced: !ok || b.Fenced, Offset: img.Offset}, nil
}

// currentBroker returns the broker if epoch is its current epoch.
func (s *Store) currentBroker(id int32, epoch int64) (*Broker, error) {
	b, ok := s.Image().Brokers[id]
	if !ok {
		return nil, fmt.Errorf("%w: %d", ErrUnknownBroker, id)
	}
	if b.Epoch != epoch {
		return nil, fmt.Errorf("%w: broker %d has epoch %d, not %d", ErrStaleBrokerEpoch, id, b.Epoch, epoch)
	}
	return b, nil
}

// ReportBrokerDead tells the active controller (forwarded) that the
// membership layer declared a broker dead. A report only speeds up
// detection; the controller's own heartbeat record decides: it fences the
// broker (at its current epoch) when it has not heard from it for
// Config.DeadReportGrace, at once or as soon as that is true; a heartbeat
// after the report clears it. A report about a fenced or unregistered
// broker is ignored.
func (s *Store) ReportBrokerDead(ctx context.Context, brokerID int32) error {
	_, err := call(ctx, s, opReportBrokerDead, deadReport{BrokerID: brokerID, ReportedBy: s.cfg.NodeID})
	return err
}

// deadReport is a ReportBrokerDead request: broker ReportedBy says broker
// BrokerID is dead.
type deadReport struct {
	BrokerID   int32 `json:"brokerId"`
	ReportedBy int32 `json:"reportedBy"`
}

// opReportBrokerDead acts for the reporter: a node may only report in its
// own name.
var opReportBrokerDead = defineOp("ReportBrokerDead",
	func(_ *Image, r deadReport) int32 { return r.ReportedBy },
	func(s *Store, ctx context.Context, r deadReport) (none, error) {
		return none{}, s.reportBrokerDead(ctx, r.BrokerID)
	})

func (s *Store) reportBrokerDead(ctx context.Context, id int32) error {
	b, ok := s.Image().Brokers[id]
	if !ok {
		// Gossip may name a node that never registered (a stray
		// member, a typo'd node id): nothing to fence.
		s.log.Info("ignoring a dead report about an unregistered broker", "broker", id)
		return nil
	}
	if b.Fenced {
		return nil
	}
	now := time.Now()
	if s.sessions.silence(id, now) < s.cfg.DeadReportGrace {
		if !refusesConnections(ctx, b) {
			// It heartbeated recently and may still be up: gossip may
			// be wrong (a partition between it and the reporter only).
			// Fence it once it stays silent for the grace
			// (fenceSuspects).
			s.sessions.suspect(id, b.Epoch, now)
			return nil
		}
		// Nothing listens at its endpoints: the process is gone.
		s.log.Info("fencing broker reported dead: its listeners refuse connections", "broker", id, "epoch", b.Epoch)
		return s.fenceBroker(ctx, id, b.Epoch, true, false)
	}
	s.log.Info("fencing broker reported dead", "broker", id, "epoch", b.Epoch)
	return s.fenceBroker(ctx, id, b.Epoch, true, false)
}

// ControlledShutdown moves leadership of every partition the broker leads
// to another alive ISR member, removes it from the ISRs it is not the last
// member of, and fences it, in one committed FenceBroker record (clean
// election only: a partition whose only ISR member is the broker goes
// offline until it comes back). A broker that restarts registers with a
// new incarnation, which gives it a new epoch and unfences it.
func (s *Store) ControlledShutdown(ctx context.Context, brokerID int32, brokerEpoch int64) error {
	_, err := call(ctx, s, opControlledShutdown, brokerAtEpoch{brokerID, brokerEpoch})
	return err
}

var opControlledShutdown = defineOp("ControlledShutdown", actsForBroker,
	func(s *Store, ctx context.Context, r brokerAtEpoch) (none, error) {
		return none{}, s.controlledShutdown(ctx, r)
	})

func (s *Store) controlledShutdown(ctx context.Context, r brokerAtEpoch) error {
	b, err := s.currentBroker(r.BrokerID, r.Epoch)
	if err != nil {
		return err
	}
	s.sessions.markShutdown(r.BrokerID, r.Epoch)
	if b.Fenced {
		return nil
	}
	return s.fenceBroker(ctx, r.BrokerID, r.Epoch, true, true)
}

// CreateTopics creates topics; it returns one result per spec, nil for
// success. With validateOnly it checks and proposes nothing.
func (s *Store) CreateTopics(ctx context.Context, specs []TopicSpec, validateOnly bool) []error {
	res, err := call(ctx, s, opCreateTopics, createTopicsRequest{specs, validateOnly})
	return results(len(specs), res, err)
}

var opCreateTopics = defineOp("CreateTopics", nil,
	func(s *Store, ctx context.Context, r createTopicsRequest) (errorList, error) {
		return s.createTopics(ctx, r.Specs, r.ValidateOnly), nil
	})

// results returns one error per item: res, or err for every item.
func results(n int, res errorList, err error) []error {
	if err == nil && len(res) == n {
		return res
	}
	if err == nil {
		err = fmt.Errorf("metadata: %d results for %d items", len(res), n)
	}
	errs := make([]error, n)
	for i := range errs {
		errs[i] = err
	}
	return errs
}

type createTopicsRequest struct {
	Specs        []TopicSpec `json:"specs"`
	ValidateOnly bool        `json:"validateOnly"`
}

func (s *Store) createTopics(ctx context.Context, specs []TopicSpec, validateOnly bool) errorList {
	s.placeMu.Lock() // until applied: see placeMu
	defer s.placeMu.Unlock()
	errs := make(errorList, len(specs))
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
		limits:     s.limits(),
		counts:     countPartitions(img),
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
		if s.planned != nil {
			s.planned()
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
	res, err := call(ctx, s, opDeleteTopics, names)
	return results(len(names), res, err)
}

var opDeleteTopics = defineOp("DeleteTopics", nil,
	func(s *Store, ctx context.Context, names []string) (errorList, error) {
		return s.deleteTopics(ctx, names), nil
	})

func (s *Store) deleteTopics(ctx context.Context, names []string) errorList {
	errs := make(errorList, len(names))
	futures := make([]raft.ApplyFuture, len(names))
	count := map[string]int{}
	for _, n := range names {
		count[n]++
	}
	img := s.Image()
	for i, name := range names {
		t, ok := img.Topics[name]
		switch {
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
	res, err := call(ctx, s, opAllocateProducerIDs, brokerID)
	return res.First, res.Count, err
}

var opAllocateProducerIDs = defineOp("AllocateProducerIDs",
	func(_ *Image, brokerID int32) int32 { return brokerID },
	func(s *Store, ctx context.Context, brokerID int32) (producerIDBlock, error) {
		first, count, err := s.allocateProducerIDs(ctx, brokerID)
		return producerIDBlock{first, count}, err
	})

type producerIDBlock struct {
	First int64 `json:"first"`
	Count int64 `json:"count"`
}

func (s *Store) allocateProducerIDs(ctx context.Context, brokerID int32) (first int64, count int64, err error) {
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
	_, err := call(ctx, s, opAlterTopicConfigs, alterConfigsRequest{topic, set, remove})
	return err
}

var opAlterTopicConfigs = defineOp("AlterTopicConfigs", nil,
	func(s *Store, ctx context.Context, r alterConfigsRequest) (none, error) {
		return none{}, s.alterTopicConfigs(ctx, r.Topic, r.Set, r.Remove)
	})

// AlterClusterConfigs changes the cluster-wide dynamic broker defaults
// (Kafka's broker resource with an empty name): set keys, remove others,
// checked with Config.ValidateClusterConfig on the merged result.
func (s *Store) AlterClusterConfigs(ctx context.Context, set map[string]string, remove []string) error {
	_, err := call(ctx, s, opAlterClusterConfigs, alterConfigsRequest{Set: set, Remove: remove})
	return err
}

var opAlterClusterConfigs = defineOp("AlterClusterConfigs", nil,
	func(s *Store, ctx context.Context, r alterConfigsRequest) (none, error) {
		return none{}, s.alterClusterConfigs(ctx, r.Set, r.Remove)
	})

func (s *Store) alterClusterConfigs(ctx context.Context, set map[string]string, remove []string) error {
	merged := maps.Clone(s.Image().ClusterConfigs)
	if merged == nil {
		merged = map[string]string{}
	}
	for _, k := range remove {
		delete(merged, k)
	}
	maps.Copy(merged, set)
	if v := s.cfg.ValidateClusterConfig; v != nil {
		if err := v(merged); err != nil {
			return fmt.Errorf("alter cluster configs: %w: %w", ErrInvalidConfig, err)
		}
	}
	_, err := s.propose(ctx, recConfigChange, &configChangeRecord{
		Cluster: true,
		Set:     set,
		Remove:  slices.Sorted(slices.Values(remove)),
	})
	if err != nil {
		return fmt.Errorf("alter cluster configs: %w", err)
	}
	return nil
}

type alterConfigsRequest struct {
	Topic  string            `json:"topic"`
	Set    map[string]string `json:"set,omitempty"`
	Remove []string          `json:"remove,omitempty"`
}

func (s *Store) alterTopicConfigs(ctx context.Context, topic string, set map[string]string, remove []string) error {
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
	_, err := call(ctx, s, opChangePartition, c)
	return err
}

// opChangePartition is AlterPartition: only the partition's current leader
// may send it (the controller's own elections are local). A change based
// on an older leader epoch fails with ErrFencedLeaderEpoch whoever sends
// it, as a deposed leader expects.
var opChangePartition = defineOp("ChangePartition",
	func(img *Image, c PartitionChange) int32 {
		if p, ok := img.Partition(c.Topic, c.Partition); ok && p.LeaderEpoch == c.LeaderEpoch {
			return p.Leader // NoLeader matches no node
		}
		return anyNode // fails as unknown or fenced
	},
	func(s *Store, ctx context.Context, c PartitionChange) (none, error) {
		return none{}, s.changePartition(ctx, c)
	})

func (s *Store) changePartition(ctx context.Context, c PartitionChange) error {
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
	limits     *partitionLimits
	// counts are the partitions of img plus those of the topics planned
	// so far (nil: not checked).
	counts *partitionCounts
}

// limits are the capacity limits the records this node proposes carry.
func (s *Store) limits() *partitionLimits {
	return &partitionLimits{MaxPartitions: s.cfg.MaxPartitions, MaxBrokerPartitions: s.cfg.MaxBrokerPartitions}
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
		assignment = decisions.PlaceReplicas(brokers, n, rf, start%len(brokers))
	}
	if pl.validate != nil && len(sp.Configs) > 0 {
		if err := pl.validate(sp.Configs); err != nil {
			return nil, fmt.Errorf("topic %q: %w: %w", sp.Name, ErrInvalidConfig, err)
		}
	}
	if pl.counts != nil {
		if err := pl.counts.check(pl.limits, fmt.Sprintf("topic %q", sp.Name), assignment); err != nil {
			return nil, err
		}
		pl.counts.add(assignment)
	}
	rec := &createTopicRecord{
		Name:       sp.Name,
		TopicID:    id,
		Partitions: make([]partitionRecord, len(assignment)),
		Configs:    sp.Configs,
		Limits:     pl.limits,
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

// CreatePartitions raises the partition count of a topic to totalCount.
// totalCount must exceed the current count (else ErrInvalidPartitions).
// assignments, if given, holds the replicas of each new partition in
// order (len = totalCount - current), validated like a CreateTopics
// assignment and with the topic's replication factor; otherwise the new
// partitions are placed like CreateTopics places them. With validateOnly it
// checks and proposes nothing.
func (s *Store) CreatePartitions(ctx context.Context, topic string, totalCount int32, assignments [][]int32, validateOnly bool) error {
	_, err := call(ctx, s, opCreatePartitions, createPartitionsRequest{topic, totalCount, assignments, validateOnly})
	return err
}

var opCreatePartitions = defineOp("CreatePartitions", nil,
	func(s *Store, ctx context.Context, r createPartitionsRequest) (none, error) {
		return none{}, s.createPartitions(ctx, r)
	})

type createPartitionsRequest struct {
	Topic        string    `json:"topic"`
	TotalCount   int32     `json:"totalCount"`
	Assignments  [][]int32 `json:"assignments,omitempty"`
	ValidateOnly bool      `json:"validateOnly"`
}

func (s *Store) createPartitions(ctx context.Context, r createPartitionsRequest) error {
	s.placeMu.Lock() // until applied: see placeMu
	defer s.placeMu.Unlock()
	img := s.Image()
	t, ok := img.Topics[r.Topic]
	if !ok {
		return fmt.Errorf("create partitions: %w: %q", ErrUnknownTopic, r.Topic)
	}
	cur := int32(len(t.Partitions))
	if r.TotalCount <= cur || r.TotalCount > MaxPartitions {
		return fmt.Errorf("%w: %q has %d partitions, asked for %d (must be more, at most %d)",
			ErrInvalidPartitions, r.Topic, cur, r.TotalCount, MaxPartitions)
	}
	rf := len(t.Partitions[0].Replicas)
	var assignment [][]int32
	if len(r.Assignments) > 0 {
		if len(r.Assignments) != int(r.TotalCount-cur) {
			return fmt.Errorf("%w: %q: %d assignments for %d new partitions",
				ErrInvalidReplicaAssignment, r.Topic, len(r.Assignments), r.TotalCount-cur)
		}
		m := make(map[int32][]int32, len(r.Assignments))
		for i, a := range r.Assignments {
			m[int32(i)] = a
		}
		a, err := checkAssignment(img, m)
		if err != nil {
			return fmt.Errorf("create partitions of %q: %w", r.Topic, err)
		}
		if len(a[0]) != rf {
			return fmt.Errorf("%w: %q: %d replicas per new partition, the topic has %d",
				ErrInvalidReplicaAssignment, r.Topic, len(a[0]), rf)
		}
		assignment = a
	} else {
		brokers := img.UnfencedBrokerIDs()
		if rf > len(brokers) {
			return fmt.Errorf("%w: %q: replication factor %d, %d unfenced brokers",
				ErrInvalidReplicationFactor, r.Topic, rf, len(brokers))
		}
		assignment = decisions.PlaceReplicas(brokers, r.TotalCount, int16(rf), mrand.IntN(len(brokers)))[cur:]
	}
	lim := s.limits()
	if err := countPartitions(img).check(lim, fmt.Sprintf("create partitions of %q", r.Topic), assignment); err != nil {
		return err
	}
	if r.ValidateOnly {
		return nil
	}
	rec := &createPartitionsRecord{TopicID: t.ID, Partitions: make([]partitionRecord, len(assignment)), Limits: lim}
	for i, replicas := range assignment {
		rec.Partitions[i] = partitionRecord{
			Partition: cur + int32(i),
			Replicas:  replicas,
			ISR:       slices.Clone(replicas),
			Leader:    leaderOf(img, replicas),
		}
	}
	if _, err := s.propose(ctx, recCreatePartitions, rec); err != nil {
		return fmt.Errorf("create partitions of %q: %w", r.Topic, err)
	}
	return nil
}

// opAddNonvoter: a broker-only node asks to join raft; it may only add
// itself.
var opAddNonvoter = defineOp("AddNonvoter",
	func(_ *Image, r addNonvoterRequest) int32 { return r.ID },
	func(s *Store, ctx context.Context, r addNonvoterRequest) (none, error) {
		return none{}, s.addNonvoter(ctx, r)
	})

type addNonvoterRequest struct {
	ID   int32  `json:"id"`
	Addr string `json:"addr"`
}

// addNonvoter adds a broker-only node to the raft configuration as a
// non-voter, unless it is there at that address already.
func (s *Store) addNonvoter(ctx context.Context, r addNonvoterRequest) error {
	s.quorumMu.Lock()
	defer s.quorumMu.Unlock()
	f := s.raft.GetConfiguration()
	if err := s.wait(ctx, f); err != nil {
		return err
	}
	for _, srv := range f.Configuration().Servers {
		if srv.ID != serverID(r.ID) {
			continue
		}
		if srv.Suffrage == raft.Voter {
			return fmt.Errorf("metadata: node %d is a voter", r.ID)
		}
		if srv.Address == raft.ServerAddress(r.Addr) {
			return nil
		}
	}
	if err := s.wait(ctx, s.raft.AddNonvoter(serverID(r.ID), raft.ServerAddress(r.Addr), 0, enqueueTimeout(ctx))); err != nil {
		return fmt.Errorf("add non-voter %d at %s: %w", r.ID, r.Addr, err)
	}
	s.log.Info("added non-voter", "id", r.ID, "addr", r.Addr)
	return nil
}
