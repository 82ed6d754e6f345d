package cluster

// The compacted topics coordinators keep their state in
// (__consumer_offsets for groups, __transaction_state for transactions),
// and the partitions of such a topic a coordinator leads. Both
// coordinators use the same two pieces: the topic is created on first
// use, a key belongs to partition abs(Java hashCode(key)) % partitions,
// the coordinator for a key is that partition's leader, and a partition
// the broker starts leading is loaded before it serves.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/metadata"
)

// createInternalTopicTimeout bounds one creation through the controller.
const createInternalTopicTimeout = 10 * time.Second

// internalTopic is one coordinator's state topic.
type internalTopic struct {
	name string
	// partitions is the configured count, used until the topic exists.
	partitions int32
	// replicationFactor is capped at the live brokers when created.
	replicationFactor int16
	// minISR, when > 0, becomes the topic's min.insync.replicas (capped
	// at the replication factor); 0 leaves the broker default.
	minISR int32
	image  func() *metadata.Image
	create func(context.Context, metadata.TopicSpec) error
	logger *slog.Logger

	createMu sync.Mutex // one creation at a time
}

// ensure creates the topic if it does not exist.
func (t *internalTopic) ensure(ctx context.Context) error {
	if _, ok := t.image().Topics[t.name]; ok {
		return nil
	}
	t.createMu.Lock()
	defer t.createMu.Unlock()
	img := t.image()
	if _, ok := img.Topics[t.name]; ok {
		return nil
	}
	rf := t.replicationFactor
	if live := int16(len(img.UnfencedBrokerIDs())); live < rf {
		rf = max(live, 1)
	}
	spec := metadata.TopicSpec{
		Name:              t.name,
		NumPartitions:     t.partitions,
		ReplicationFactor: rf,
		Configs: map[string]string{
			"cleanup.policy":   "compact",
			"compression.type": "uncompressed",
			"retention.ms":     "-1",
			"retention.bytes":  "-1",
		},
	}
	if t.minISR > 0 {
		spec.Configs["min.insync.replicas"] = strconv.Itoa(int(min(t.minISR, int32(rf))))
	}
	ctx, cancel := context.WithTimeout(ctx, createInternalTopicTimeout)
	defer cancel()
	err := t.create(ctx, spec)
	if err != nil && !errors.Is(err, metadata.ErrTopicExists) {
		return fmt.Errorf("creating %s (%d partitions, replication factor %d): %w", t.name, spec.NumPartitions, rf, err)
	}
	t.logger.Info("created "+t.name, "partitions", spec.NumPartitions, "replication.factor", rf)
	return nil
}

// numPartitions is the topic's partition count, or the configured one
// before it exists.
func (t *internalTopic) numPartitions() int32 {
	if tp, ok := t.image().Topics[t.name]; ok && len(tp.Partitions) > 0 {
		return int32(len(tp.Partitions))
	}
	return t.partitions
}

// partitionFor is the partition holding key's state.
func (t *internalTopic) partitionFor(key string) int32 {
	return groupPartition(key, t.numPartitions())
}

// coordinatorFor answers FindCoordinator for key: the leader of its
// partition and its endpoint on listener, creating the topic first if
// needed. Every failure is COORDINATOR_NOT_AVAILABLE, which clients retry.
func (t *internalTopic) coordinatorFor(ctx context.Context, key, listener string) (int32, metadata.Endpoint, error) {
	if err := t.ensure(ctx); err != nil {
		t.logger.Warn("finding coordinator", "topic", t.name, "key", key, "err", err)
		return -1, metadata.Endpoint{}, kerr.CoordinatorNotAvailable
	}
	img := t.image()
	mp, ok := img.Partition(t.name, t.partitionFor(key))
	if !ok || mp.Leader == metadata.NoLeader {
		return -1, metadata.Endpoint{}, kerr.CoordinatorNotAvailable
	}
	if b, ok := img.Brokers[mp.Leader]; !ok || b.Fenced {
		// Metadata does not list a fenced broker, so a client told it is
		// the coordinator cannot reach it: franz-go fails with "unknown
		// broker", fatal to a transactional producer. Retried instead.
		return -1, metadata.Endpoint{}, kerr.CoordinatorNotAvailable
	}
	ep, ok := img.BrokerEndpoint(mp.Leader, listener)
	if !ok {
		return -1, metadata.Endpoint{}, kerr.CoordinatorNotAvailable
	}
	return mp.Leader, ep, nil
}

// offsetsPartition is a coordinator's view of one partition it leads.
type offsetsPartition struct {
	leaderEpoch int32
	loading     bool
	token       uint64
}

// ledPartitions is the part of a coordinator's state that follows the
// leadership of its topic's partitions. It is guarded by the owning
// coordinator's mu; methods ending in Locked need it held.
type ledPartitions struct {
	nextToken   uint64
	parts       map[int32]*offsetsPartition
	roleChanged map[int32]bool
}

func newLedPartitions() ledPartitions {
	return ledPartitions{parts: map[int32]*offsetsPartition{}, roleChanged: map[int32]bool{}}
}

// applyRoleChangesLocked handles the partitions whose role changed since
// the last call: one this broker now leads (or leads in a new epoch) is
// dropped if it was owned in an older epoch, then loaded by load (called
// with the coordinator's lock held; it must start the load elsewhere and
// return); one it stopped leading is dropped. drop must delete the
// partition from parts along with the coordinator's own state for it.
func (l *ledPartitions) applyRoleChangesLocked(
	replica func(p int32) (offsetsReplica, error),
	drop func(p int32),
	load func(p int32, part offsetsReplica, token uint64),
) {
	for p := range l.roleChanged {
		delete(l.roleChanged, p)
		part, err := replica(p)
		leading := err == nil && part.IsLeader()
		cur, owned := l.parts[p]
		if owned && (!leading || cur.leaderEpoch != part.LeaderEpoch()) {
			drop(p)
		}
		if !leading || (owned && cur.leaderEpoch == part.LeaderEpoch()) {
			continue
		}
		l.nextToken++
		l.parts[p] = &offsetsPartition{leaderEpoch: part.LeaderEpoch(), loading: true, token: l.nextToken}
		load(p, part, l.nextToken)
	}
}
