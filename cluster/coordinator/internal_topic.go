package coordinator

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
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/metadata"
)

// createInternalTopicTimeout bounds one creation through the controller.
const createInternalTopicTimeout = 10 * time.Second

// InternalTopic is one coordinator's state topic. The coordinator fills
// in the fields once, before any method is called.
type InternalTopic struct {
	Name string
	// Partitions is the configured count, used until the topic exists.
	Partitions int32
	// ReplicationFactor is capped at the live brokers when created.
	ReplicationFactor int16
	// MinISR, when > 0, becomes the topic's min.insync.replicas (capped
	// at the replication factor); 0 leaves the broker default.
	MinISR int32
	Image  func() *metadata.Image
	// Create creates the topic through the controller; it may block (up
	// to createInternalTopicTimeout) and is called under createMu only.
	Create func(context.Context, metadata.TopicSpec) error
	Logger *slog.Logger

	createMu sync.Mutex // one creation at a time
}

// Ensure creates the topic if it does not exist.
func (t *InternalTopic) Ensure(ctx context.Context) error {
	if _, ok := t.Image().Topics[t.Name]; ok {
		return nil
	}
	t.createMu.Lock()
	defer t.createMu.Unlock()
	img := t.Image()
	if _, ok := img.Topics[t.Name]; ok {
		return nil
	}
	rf := t.ReplicationFactor
	if live := int16(len(img.UnfencedBrokerIDs())); live < rf {
		rf = max(live, 1)
	}
	spec := metadata.TopicSpec{
		Name:              t.Name,
		NumPartitions:     t.Partitions,
		ReplicationFactor: rf,
		Configs: map[string]string{
			"cleanup.policy":   "compact",
			"compression.type": "uncompressed",
			"retention.ms":     "-1",
			"retention.bytes":  "-1",
		},
	}
	if t.MinISR > 0 {
		spec.Configs["min.insync.replicas"] = strconv.Itoa(int(min(t.MinISR, int32(rf))))
	}
	ctx, cancel := context.WithTimeout(ctx, createInternalTopicTimeout)
	defer cancel()
	err := t.Create(ctx, spec)
	if err != nil && !errors.Is(err, metadata.ErrTopicExists) {
		return fmt.Errorf("creating %s (%d partitions, replication factor %d): %w", t.Name, spec.NumPartitions, rf, err)
	}
	t.Logger.Info("created "+t.Name, "partitions", spec.NumPartitions, "replication.factor", rf)
	return nil
}

// NumPartitions is the topic's partition count, or the configured one
// before it exists.
func (t *InternalTopic) NumPartitions() int32 {
	if tp, ok := t.Image().Topics[t.Name]; ok && len(tp.Partitions) > 0 {
		return int32(len(tp.Partitions))
	}
	return t.Partitions
}

// PartitionFor is the partition holding key's state.
func (t *InternalTopic) PartitionFor(key string) int32 {
	return PartitionFor(key, t.NumPartitions())
}

// CoordinatorFor answers FindCoordinator for key: the leader of its
// partition and its endpoint on listener, creating the topic first if
// needed. Every failure is COORDINATOR_NOT_AVAILABLE, which clients retry.
func (t *InternalTopic) CoordinatorFor(ctx context.Context, key, listener string) (int32, metadata.Endpoint, error) {
	if err := t.Ensure(ctx); err != nil {
		t.Logger.Warn("finding coordinator", "topic", t.Name, "key", key, "err", err)
		return -1, metadata.Endpoint{}, kerr.CoordinatorNotAvailable
	}
	img := t.Image()
	mp, ok := img.Partition(t.Name, t.PartitionFor(key))
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

// OffsetsPartition is a coordinator's view of one partition it leads.
type OffsetsPartition struct {
	LeaderEpoch int32
	// Loading is set until the coordinator installed what it read.
	Loading bool
	// Token names this term of leadership: a load installs its result
	// only if the partition still has the token it started with.
	Token uint64
}

// LedPartitions is the part of a coordinator's state that follows the
// leadership of its topic's partitions. It is guarded by the owning
// coordinator's mu; methods ending in Locked need it held.
type LedPartitions struct {
	nextToken uint64
	// Parts are the partitions this broker leads, by partition.
	Parts map[int32]*OffsetsPartition
	// RoleChanged are the partitions whose role changed since the last
	// ApplyRoleChangesLocked.
	RoleChanged map[int32]bool
}

// NewLedPartitions is an empty LedPartitions.
func NewLedPartitions() LedPartitions {
	return LedPartitions{Parts: map[int32]*OffsetsPartition{}, RoleChanged: map[int32]bool{}}
}

// ApplyRoleChangesLocked handles the partitions whose role changed since
// the last call: one this broker now leads (or leads in a new epoch) is
// dropped if it was owned in an older epoch, then loaded by load (called
// with the coordinator's lock held; it must start the load elsewhere and
// return); one it stopped leading is dropped. drop must delete the
// partition from Parts along with the coordinator's own state for it.
func (l *LedPartitions) ApplyRoleChangesLocked(
	replica func(p int32) (OffsetsReplica, error),
	drop func(p int32),
	load func(p int32, part OffsetsReplica, token uint64),
) {
	for p := range l.RoleChanged {
		delete(l.RoleChanged, p)
		part, err := replica(p)
		leading := err == nil && part.IsLeader()
		cur, owned := l.Parts[p]
		if owned && (!leading || cur.LeaderEpoch != part.LeaderEpoch()) {
			drop(p)
		}
		if !leading || (owned && cur.LeaderEpoch == part.LeaderEpoch()) {
			continue
		}
		l.nextToken++
		l.Parts[p] = &OffsetsPartition{LeaderEpoch: part.LeaderEpoch(), Loading: true, Token: l.nextToken}
		load(p, part, l.nextToken)
	}
}

// JavaStringHashCode is Java's String.hashCode: 31*h + c over the UTF-16
// code units.
func JavaStringHashCode(s string) int32 {
	var h int32
	for _, c := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(c)
	}
	return h
}

// PartitionFor is Kafka's partitionFor: Utils.abs(hash) % n, where
// Utils.abs(x) = x & 0x7fffffff.
func PartitionFor(key string, n int32) int32 {
	return (JavaStringHashCode(key) & 0x7fffffff) % n
}

// Wake sends on ch, a channel of capacity 1, unless a wake-up is pending.
func Wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
