package cluster

// The group coordinator: glue between the pure state machine of package
// group and this broker's partitions of __consumer_offsets.
//
// A group lives on partition abs(javaHashCode(group.id)) % partitions of
// __consumer_offsets, and the leader of that partition is its
// coordinator. When this broker becomes leader of such a partition
// (onRoleChange), the coordinator reads the partition from its log start
// to its log end (as Kafka's GroupMetadataManager does), keeps the latest
// value per key (a null value deletes), rebuilds the groups and their
// offsets, and answers COORDINATOR_LOAD_IN_PROGRESS meanwhile
// (groups_load.go). When it stops leading, it drops those groups (waiting
// joins and syncs get NOT_COORDINATOR) and answers NOT_COORDINATOR from
// then on.
//
// Writes (offset commits, the leader's assignment, tombstones) are one
// uncompressed batch appended with acks=all and acknowledged once the
// partition's high watermark passes it: a delayedStore in the groups
// purgatory, checked by the onHighWatermark and onRoleChange hooks, with
// offsets.commit.timeout.ms (Kafka's default, 5s) as its deadline
// (groups_store.go).
//
// The topic is created with cleanup.policy=compact (the storage cleaner
// keeps the latest record per key and drops old tombstones) and with
// retention.ms=-1 and retention.bytes=-1 (internal_topic.go).
//
// Offsets of Empty groups expire after offsets.retention.minutes. The
// sweep runs every offsets.retention.check.interval.ms (Kafka's
// default, 10 minutes) and writes tombstones; an Empty group left without
// offsets is deleted (a group tombstone) by the same sweep
// (groups_offsets.go).
//
// The request handlers (api_08 … api_47) call the coordinator's methods
// (groups_members.go, groups_offsets.go), which take and release the lock
// themselves; helpers named …Locked require it held.
//
// # Lock order
//
// groupCoordinator.mu may be held while calling:
//   - package group (a Group's methods), which calls back the respond
//     functions of waiting JoinGroup and SyncGroup requests; those only
//     hand a response to the connection (RequestContext.Respond) and never
//     block;
//   - read-only look-ups of the host: its metadata image and a replica's
//     role (offsetsReplica.IsLeader, LeaderEpoch), which take only the
//     replica's own lock.
//
// It must never be held while calling:
//   - store (an append to __consumer_offsets): AppendAsLeader runs the
//     high watermark hook, which checks the purgatory, whose completions
//     take mu; and the completion of a write takes mu itself;
//   - the purgatory (waiters.Check, TryCompleteElseWatch, Close): Close
//     waits for expiring operations, whose done functions take mu;
//   - the host's CreateOffsetsTopic: it waits for the controller and opens
//     partitions, whose role changes call onRoleChange, which takes mu;
//   - a log read (loading reads outside the lock and installs under it).
//
// topic.createMu (one creation of the topic at a time) is taken before, never
// under, mu.
//
// Goroutines: run (the ticker and the loader dispatcher) and one loader
// per partition being loaded, all owned by run and stopped by its context.

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"time"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/cluster/group"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/purgatory"
	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/wire/record"
)

const (
	offsetsTopic = "__consumer_offsets"
	// offsetsRetentionCheckInterval is offsets.retention.check.interval.ms'
	// default.
	offsetsRetentionCheckInterval = 10 * time.Minute
	// offsetCommitTimeout is offsets.commit.timeout.ms' default.
	offsetCommitTimeout = 5 * time.Second
	// groupTick is how often sessions and rebalance timeouts are checked.
	groupTick = 100 * time.Millisecond
	// offsetsLoadBufferSize is offsets.load.buffer.size' default.
	offsetsLoadBufferSize = 5 << 20
)

// groupsHost is what the coordinator needs of the broker it runs in
// (groupsNodeHost in groups_host.go; a fake in the tests). Leadership
// changes come the other way: the host calls onRoleChange and
// onHighWatermark.
type groupsHost interface {
	// Image is the current cluster metadata: the partitions of
	// __consumer_offsets, their leaders, the brokers' endpoints.
	Image() *metadata.Image
	// OffsetsReplica is this broker's replica of partition p of
	// __consumer_offsets (replication.ErrUnknownTopicOrPartition when it
	// has none).
	OffsetsReplica(p int32) (offsetsReplica, error)
	// CreateOffsetsTopic creates __consumer_offsets through the controller
	// and opens this broker's replicas of it (metadata.ErrTopicExists
	// when it exists already).
	CreateOffsetsTopic(ctx context.Context, spec metadata.TopicSpec) error
}

// offsetsReplica is one replica of a __consumer_offsets partition.
type offsetsReplica interface {
	IsLeader() bool
	LeaderEpoch() int32
	LogStartOffset() int64
	LogEndOffset() int64
	HighWatermark() int64
	// ReadLog reads whole batches from offset, below upperBound, at most
	// maxBytes (at least one batch).
	ReadLog(offset int64, maxBytes int, upperBound int64) ([]byte, error)
	// AppendAsLeader appends batch with acks=all semantics (the ISR must
	// be at least min.insync.replicas) and returns its last offset.
	AppendAsLeader(batch record.Batch) (lastOffset int64, err error)
}

// groupsConfig is the coordinator's part of the broker config.
type groupsConfig struct {
	// OffsetsTopicNumPartitions and OffsetsTopicReplicationFactor are
	// offsets.topic.num.partitions and offsets.topic.replication.factor.
	OffsetsTopicNumPartitions     int32
	OffsetsTopicReplicationFactor int16
	// InitialRebalanceDelay is group.initial.rebalance.delay.ms.
	InitialRebalanceDelay time.Duration
	// OffsetsRetention is offsets.retention.minutes.
	OffsetsRetention time.Duration
	// Consumer configures consumer (KIP-848) groups.
	Consumer group.ConsumerConfig
}

// javaStringHashCode is Java's String.hashCode: 31*h + c over the UTF-16
// code units.
func javaStringHashCode(s string) int32 {
	var h int32
	for _, c := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(c)
	}
	return h
}

// groupPartition is Kafka's partitionFor: Utils.abs(hash) % n, where
// Utils.abs(x) = x & 0x7fffffff.
func groupPartition(groupID string, n int32) int32 {
	return (javaStringHashCode(groupID) & 0x7fffffff) % n
}

type groupCoordinator struct {
	host    groupsHost
	cfg     groupsConfig
	logger  *slog.Logger
	waiters *purgatory.Purgatory[replication.TopicPartition]
	kick    chan struct{}

	topic *internalTopic // __consumer_offsets

	mu struct {
		sync.Mutex
		ledPartitions
		closed bool
		groups map[string]*group.Group
		// lastImage is the metadata image consumer groups last saw
		// (groups_consumer.go).
		lastImage *metadata.Image
		// topics is imageTopics(topicsImage), built once per image
		// rather than once per heartbeat (groups_consumer.go).
		topicsImage *metadata.Image
		topics      group.Topics
		// pendingTxn holds TxnOffsetCommit offsets by producer id, then
		// group, until the transaction's marker (groups_txn_offsets.go).
		pendingTxn map[int64]map[string]map[group.TopicPartition]group.Offset
	}
}

func newGroupCoordinator(host groupsHost, cfg groupsConfig, logger *slog.Logger) *groupCoordinator {
	cfg.Consumer = consumerDefaults(cfg.Consumer)
	c := &groupCoordinator{
		host:    host,
		cfg:     cfg,
		logger:  logger.With("component", "groups"),
		waiters: purgatory.New[replication.TopicPartition]("groups"),
		kick:    make(chan struct{}, 1),
	}
	c.topic = &internalTopic{
		name:              offsetsTopic,
		partitions:        cfg.OffsetsTopicNumPartitions,
		replicationFactor: cfg.OffsetsTopicReplicationFactor,
		image:             host.Image,
		create:            host.CreateOffsetsTopic,
		logger:            c.logger,
	}
	c.mu.ledPartitions = newLedPartitions()
	c.mu.groups = map[string]*group.Group{}
	return c
}

// onRoleChange is chained into the replica manager's OnRoleChange hook.
func (c *groupCoordinator) onRoleChange(tp replication.TopicPartition) {
	if tp.Topic != offsetsTopic {
		return
	}
	c.waiters.Check(tp)
	c.mu.Lock()
	c.mu.roleChanged[tp.Partition] = true
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// onHighWatermark is chained into the OnHighWatermark hook.
func (c *groupCoordinator) onHighWatermark(tp replication.TopicPartition) {
	if tp.Topic == offsetsTopic {
		c.waiters.Check(tp)
	}
}

// run ticks the groups, loads partitions it became leader of, and sweeps
// expired offsets, until ctx ends.
func (c *groupCoordinator) run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	tick := time.NewTicker(groupTick)
	defer tick.Stop()
	sweep := time.NewTicker(offsetsRetentionCheckInterval)
	defer sweep.Stop()
	c.handleRoleChanges(ctx, &wg)
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.kick:
			c.handleRoleChanges(ctx, &wg)
		case now := <-tick.C:
			c.tick(now)
		case now := <-sweep.C:
			c.expireOffsets(now)
		}
	}
}

// close fails every waiting group request with NOT_COORDINATOR and
// refuses new ones.
func (c *groupCoordinator) close() {
	c.mu.Lock()
	c.mu.closed = true
	for id, g := range c.mu.groups {
		g.Drop(kerr.NotCoordinator)
		delete(c.mu.groups, id)
	}
	clear(c.mu.parts)
	c.mu.Unlock()
	c.waiters.Close()
}

// numPartitions is the partition count of __consumer_offsets.
func (c *groupCoordinator) numPartitions() int32 { return c.topic.numPartitions() }

// partitionFor is the __consumer_offsets partition of a group.
func (c *groupCoordinator) partitionFor(groupID string) int32 { return c.topic.partitionFor(groupID) }

// handleRoleChanges starts loading the partitions this broker became
// leader of (or leads in a new epoch) and drops the ones it stopped
// leading.
func (c *groupCoordinator) handleRoleChanges(ctx context.Context, wg *sync.WaitGroup) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed {
		return
	}
	c.mu.applyRoleChangesLocked(c.host.OffsetsReplica, c.dropLocked, func(p int32, part offsetsReplica, token uint64) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.load(ctx, p, part, token)
		}()
	})
}

// dropLocked forgets the groups of partition p.
func (c *groupCoordinator) dropLocked(p int32) {
	delete(c.mu.parts, p)
	c.dropPendingLocked(p)
	n := c.numPartitions()
	for id, g := range c.mu.groups {
		if groupPartition(id, n) == p {
			g.Drop(kerr.NotCoordinator)
			delete(c.mu.groups, id)
		}
	}
	c.logger.Info("stopped coordinating", "partition", p)
}

// groupLocked finds the group of id this broker coordinates. create makes
// an Empty one if it does not exist; otherwise a missing group is nil
// with a nil error.
func (c *groupCoordinator) groupLocked(id string, create bool) (*group.Group, error) {
	if c.mu.closed {
		return nil, kerr.NotCoordinator
	}
	st, ok := c.mu.parts[c.partitionFor(id)]
	switch {
	case !ok:
		return nil, kerr.NotCoordinator
	case st.loading:
		return nil, kerr.CoordinatorLoadInProgress
	}
	g, ok := c.mu.groups[id]
	if !ok && create {
		g = group.New(id, c.cfg.InitialRebalanceDelay, time.Now())
		c.mu.groups[id] = g
	}
	return g, nil
}

// isCurrentLocked reports whether g is still the coordinated group of its id:
// a write's completion applies to it only then (the group may have been
// dropped, deleted or reloaded meanwhile).
func (c *groupCoordinator) isCurrentLocked(g *group.Group) bool {
	return c.mu.groups[g.ID] == g
}

// tick runs every group's timers, and writes the metadata of the groups
// that changed outside a sync (became Empty, replaced a static member).
func (c *groupCoordinator) tick(now time.Time) {
	type write struct {
		p    int32
		recs []record.Record
		g    *group.Group // a consumer group, whose failed write is redone
	}
	var writes []write
	c.mu.Lock()
	c.refreshConsumerMetadataLocked()
	for id, g := range c.mu.groups {
		if cg := g.Consumer(); cg != nil {
			cg.Tick(now)
			g.SyncConsumerState(now)
			if recs := cg.TakeRecords(); len(recs) > 0 {
				writes = append(writes, write{c.partitionFor(id), kvRecords(recs), g})
			}
			continue
		}
		g.Tick(now)
		if g.TakeDirty() {
			writes = append(writes, write{c.partitionFor(id), []record.Record{{Key: group.GroupKey(id), Value: g.MetadataValue()}}, nil})
		}
	}
	c.mu.Unlock()
	for _, w := range writes {
		c.store(w.p, w.recs, func(err error) {
			if err != nil {
				c.logger.Debug("storing group", "err", err)
				if w.g != nil {
					c.consumerWriteFailed(w.g)
				}
			}
		})
	}
}

// groupCounts returns how many loaded groups are in each state (metrics).
func (c *groupCoordinator) groupCounts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for _, g := range c.mu.groups {
		out[g.StateName()]++
	}
	return out
}

// clientHost is the member's host as Kafka reports it ("/1.2.3.4").
func clientHost(rc *server.RequestContext) string {
	if rc.Remote == nil {
		return ""
	}
	s := rc.Remote.String()
	if h, _, err := net.SplitHostPort(s); err == nil {
		return "/" + h
	}
	return "/" + s
}
