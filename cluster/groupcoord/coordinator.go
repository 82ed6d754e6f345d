package groupcoord

// The Coordinator type: its host, its config, its goroutine and the
// leadership of the __consumer_offsets partitions (see doc.go).

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/cluster/coordinator"
	"github.com/kbroker/kbroker/cluster/group"
	"github.com/kbroker/kbroker/internal/wallclock"
	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/purgatory"
	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/wire/record"
)

const (
	// OffsetsTopic is the topic the groups are kept in.
	OffsetsTopic = "__consumer_offsets"
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

// Host is what the coordinator needs of the broker it runs in
// (cluster's groupsNodeHost; a fake in the tests). Leadership changes
// come the other way: the host calls OnRoleChange and OnHighWatermark.
// The coordinator calls Image and OffsetsReplica under its lock (they
// must not block nor call back into the coordinator), and
// CreateOffsetsTopic never under it.
type Host interface {
	// Image is the current cluster metadata: the partitions of
	// __consumer_offsets, their leaders, the brokers' endpoints.
	Image() *metadata.Image
	// OffsetsReplica is this broker's replica of partition p of
	// __consumer_offsets (replication.ErrUnknownTopicOrPartition when it
	// has none).
	OffsetsReplica(p int32) (coordinator.OffsetsReplica, error)
	// CreateOffsetsTopic creates __consumer_offsets through the controller
	// and opens this broker's replicas of it (metadata.ErrTopicExists
	// when it exists already).
	CreateOffsetsTopic(ctx context.Context, spec metadata.TopicSpec) error
}

// Config is the coordinator's part of the broker config.
type Config struct {
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

// Coordinator is the group coordinator of one broker: it coordinates the
// groups of the __consumer_offsets partitions the broker leads.
type Coordinator struct {
	host    Host
	cfg     Config
	logger  *slog.Logger
	waiters *purgatory.Purgatory[replication.TopicPartition]
	kick    chan struct{}

	topic *coordinator.InternalTopic // __consumer_offsets

	mu struct {
		sync.Mutex
		coordinator.LedPartitions
		closed bool
		groups map[string]*group.Group
		// lastImage is the metadata image consumer groups last saw
		// (consumer.go).
		lastImage *metadata.Image
		// topics is imageTopics(topicsImage), built once per image
		// rather than once per heartbeat (consumer.go).
		topicsImage *metadata.Image
		topics      group.Topics
		// pendingTxn holds TxnOffsetCommit offsets by producer id, then
		// group, until the transaction's marker (txn_offsets.go).
		pendingTxn map[int64]map[string]map[group.TopicPartition]group.Offset
	}
}

// New is a coordinator on host; Run starts it.
func New(host Host, cfg Config, logger *slog.Logger) *Coordinator {
	cfg.Consumer = consumerDefaults(cfg.Consumer)
	c := &Coordinator{
		host:    host,
		cfg:     cfg,
		logger:  logger.With("component", "groups"),
		waiters: purgatory.New[replication.TopicPartition]("groups"),
		kick:    make(chan struct{}, 1),
	}
	c.topic = &coordinator.InternalTopic{
		Name:              OffsetsTopic,
		Partitions:        cfg.OffsetsTopicNumPartitions,
		ReplicationFactor: cfg.OffsetsTopicReplicationFactor,
		Image:             host.Image,
		Create:            host.CreateOffsetsTopic,
		Logger:            c.logger,
	}
	c.mu.LedPartitions = coordinator.NewLedPartitions()
	c.mu.groups = map[string]*group.Group{}
	return c
}

// OnRoleChange is chained into the replica manager's OnRoleChange hook.
func (c *Coordinator) OnRoleChange(tp replication.TopicPartition) {
	if tp.Topic != OffsetsTopic {
		return
	}
	c.waiters.Check(tp)
	c.mu.Lock()
	c.mu.RoleChanged[tp.Partition] = true
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// OnHighWatermark is chained into the OnHighWatermark hook.
func (c *Coordinator) OnHighWatermark(tp replication.TopicPartition) {
	if tp.Topic == OffsetsTopic {
		c.waiters.Check(tp)
	}
}

// Run ticks the groups, loads partitions it became leader of, and sweeps
// expired offsets, until ctx ends.
func (c *Coordinator) Run(ctx context.Context) {
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
		case <-sweep.C:
			// Commit timestamps are the time of day (offsets.go).
			c.expireOffsets(wallclock.Now())
		}
	}
}

// Close fails every waiting group request with NOT_COORDINATOR and
// refuses new ones.
func (c *Coordinator) Close() {
	c.mu.Lock()
	c.mu.closed = true
	for id, g := range c.mu.groups {
		g.Drop(kerr.NotCoordinator)
		delete(c.mu.groups, id)
	}
	clear(c.mu.Parts)
	c.mu.Unlock()
	c.waiters.Close()
}

// numPartitions is the partition count of __consumer_offsets.
func (c *Coordinator) numPartitions() int32 { return c.topic.NumPartitions() }

// Topic is __consumer_offsets, for FindCoordinator and for creating it
// on first use.
func (c *Coordinator) Topic() *coordinator.InternalTopic { return c.topic }

// PartitionFor is the __consumer_offsets partition of a group.
func (c *Coordinator) PartitionFor(groupID string) int32 { return c.topic.PartitionFor(groupID) }

// handleRoleChanges starts loading the partitions this broker became
// leader of (or leads in a new epoch) and drops the ones it stopped
// leading.
func (c *Coordinator) handleRoleChanges(ctx context.Context, wg *sync.WaitGroup) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed {
		return
	}
	c.mu.ApplyRoleChangesLocked(c.host.OffsetsReplica, c.dropLocked, func(p int32, part coordinator.OffsetsReplica, token uint64) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.load(ctx, p, part, token)
		}()
	})
}

// dropLocked forgets the groups of partition p.
func (c *Coordinator) dropLocked(p int32) {
	delete(c.mu.Parts, p)
	c.dropPendingLocked(p)
	n := c.numPartitions()
	for id, g := range c.mu.groups {
		if coordinator.PartitionFor(id, n) == p {
			g.Drop(kerr.NotCoordinator)
			delete(c.mu.groups, id)
		}
	}
	c.logger.Info("stopped coordinating", "partition", p)
}

// groupLocked finds the group of id this broker coordinates. create makes
// an Empty one if it does not exist; otherwise a missing group is nil
// with a nil error.
func (c *Coordinator) groupLocked(id string, create bool) (*group.Group, error) {
	if c.mu.closed {
		return nil, kerr.NotCoordinator
	}
	st, ok := c.mu.Parts[c.PartitionFor(id)]
	switch {
	case !ok:
		return nil, kerr.NotCoordinator
	case st.Loading:
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
func (c *Coordinator) isCurrentLocked(g *group.Group) bool {
	return c.mu.groups[g.ID] == g
}

// tick runs every group's timers, and writes the metadata of the groups
// that changed outside a sync (became Empty, replaced a static member).
func (c *Coordinator) tick(now time.Time) {
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
				writes = append(writes, write{c.PartitionFor(id), kvRecords(recs), g})
			}
			continue
		}
		g.Tick(now)
		if g.TakeDirty() {
			writes = append(writes, write{c.PartitionFor(id), []record.Record{{Key: group.GroupKey(id), Value: g.MetadataValue()}}, nil})
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

// GroupCounts returns how many loaded groups are in each state (metrics).
func (c *Coordinator) GroupCounts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for _, g := range c.mu.groups {
		out[g.StateName()]++
	}
	return out
}
