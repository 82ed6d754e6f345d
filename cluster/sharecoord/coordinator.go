package sharecoord

// The Coordinator type: its host, its config, its goroutine, and the
// leadership of the __share_group_state partitions and of the
// __consumer_offsets partitions its share groups live on (see doc.go).

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/kbroker/kbroker/cluster/coordinator"
	"github.com/kbroker/kbroker/cluster/share"
	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/purgatory"
	"github.com/kbroker/kbroker/replication"
)

const (
	// StateTopic is the topic share-partition states are kept in.
	StateTopic = "__share_group_state"
	// writeTimeout is share.coordinator.write.timeout.ms' default.
	writeTimeout = 5 * time.Second
	// loadBufferSize is share.coordinator.load.buffer.size' default.
	loadBufferSize = 5 << 20
	// groupTick is how often member sessions are checked.
	groupTick = 250 * time.Millisecond
)

// Host is what the coordinator needs of the broker it runs in
// (cluster's sharesNodeHost; a fake in the tests). The coordinator calls
// Image, StateReplica and LeadsGroup under its lock (they must not block
// nor call back into it), CreateStateTopic and the Persister never.
type Host interface {
	Image() *metadata.Image
	// StateReplica is this broker's replica of partition p of
	// __share_group_state.
	StateReplica(p int32) (coordinator.OffsetsReplica, error)
	// CreateStateTopic creates __share_group_state and opens this
	// broker's replicas of it.
	CreateStateTopic(ctx context.Context, spec metadata.TopicSpec) error
	// LeadsGroup reports whether this broker leads the
	// __consumer_offsets partition of group: it is the group's
	// coordinator, for share groups as for the others.
	LeadsGroup(group string) bool
	// GroupPartition is the __consumer_offsets partition of group.
	GroupPartition(group string) int32
}

// Persister reaches the share coordinator of any share-partition, on
// this broker or another (cluster's, over the state APIs 83–87).
type Persister interface {
	Initialize(ctx context.Context, k share.StateKey, stateEpoch int32, startOffset int64) error
	Summary(ctx context.Context, k share.StateKey) (Summary, error)
	Delete(ctx context.Context, k share.StateKey) error
}

// Config is the coordinator's part of the broker config.
type Config struct {
	// StateTopicPartitions, StateTopicReplicationFactor and
	// StateTopicMinISR are share.coordinator.state.topic.*.
	StateTopicPartitions        int32
	StateTopicReplicationFactor int16
	StateTopicMinISR            int32
	// Group is the share group membership settings (group.share.*),
	// GroupFor a group's own (its GROUP configs over them).
	Group    share.GroupConfig
	GroupFor func(group string) (share.GroupConfig, time.Duration)
}

// Coordinator is the share coordinator of one broker: the share-partition
// states of the __share_group_state partitions it leads, and the share
// groups whose __consumer_offsets partition it leads.
type Coordinator struct {
	host      Host
	cfg       Config
	logger    *slog.Logger
	waiters   *purgatory.Purgatory[replication.TopicPartition]
	kick      chan struct{}
	topic     *coordinator.InternalTopic
	persister Persister

	// writeMu serialises the writes of one state partition from the
	// computation of the new state to its commit, so the log holds them
	// in the order the in-memory state applied them.
	writeMu sync.Mutex
	writing map[int32]*sync.Mutex

	mu struct {
		sync.Mutex
		coordinator.LedPartitions
		closed bool
		states map[share.StateKey]*state
		groups map[string]*shareGroup
	}
}

// New is a coordinator on host; Run starts it. SetPersister must be
// called before any request.
func New(host Host, cfg Config, logger *slog.Logger) *Coordinator {
	c := &Coordinator{
		host:    host,
		cfg:     cfg,
		logger:  logger.With("component", "shares"),
		waiters: purgatory.New[replication.TopicPartition]("shares"),
		kick:    make(chan struct{}, 1),
		writing: map[int32]*sync.Mutex{},
	}
	c.topic = &coordinator.InternalTopic{
		Name:              StateTopic,
		Partitions:        cfg.StateTopicPartitions,
		ReplicationFactor: cfg.StateTopicReplicationFactor,
		MinISR:            cfg.StateTopicMinISR,
		Image:             host.Image,
		Create:            host.CreateStateTopic,
		Logger:            c.logger,
	}
	c.mu.LedPartitions = coordinator.NewLedPartitions()
	c.mu.states = map[share.StateKey]*state{}
	c.mu.groups = map[string]*shareGroup{}
	return c
}

// SetPersister gives the coordinator the way to the share-partition
// states of other brokers (the node builds it after the coordinator).
func (c *Coordinator) SetPersister(p Persister) { c.persister = p }

// Topic is __share_group_state.
func (c *Coordinator) Topic() *coordinator.InternalTopic { return c.topic }

// PartitionFor is the __share_group_state partition of a
// share-partition: Kafka's key "group:topicId:partition".
func (c *Coordinator) PartitionFor(k share.StateKey) int32 {
	return c.topic.PartitionFor(StateKeyString(k))
}

// OnRoleChange is chained into the replica manager's OnRoleChange hook:
// __share_group_state partitions are loaded or dropped, and the share
// groups of a __consumer_offsets partition whose leadership moved are
// dropped (their members rejoin at the new coordinator).
func (c *Coordinator) OnRoleChange(tp replication.TopicPartition, offsetsTopic string) {
	switch tp.Topic {
	case StateTopic:
		c.waiters.Check(tp)
		c.mu.Lock()
		c.mu.RoleChanged[tp.Partition] = true
		c.mu.Unlock()
		coordinator.Wake(c.kick)
	case offsetsTopic:
		c.mu.Lock()
		for id := range c.mu.groups {
			if c.host.GroupPartition(id) == tp.Partition && !c.host.LeadsGroup(id) {
				delete(c.mu.groups, id)
			}
		}
		c.mu.Unlock()
	}
}

// OnHighWatermark is chained into the OnHighWatermark hook.
func (c *Coordinator) OnHighWatermark(tp replication.TopicPartition) {
	if tp.Topic == StateTopic {
		c.waiters.Check(tp)
	}
}

// Run loads the partitions it became leader of and expires share group
// members, until ctx ends.
func (c *Coordinator) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	tick := time.NewTicker(groupTick)
	defer tick.Stop()
	c.handleRoleChanges(ctx, &wg)
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.kick:
			c.handleRoleChanges(ctx, &wg)
		case now := <-tick.C:
			c.expireMembers(now)
		}
	}
}

// Close fails the waiting writes and refuses new requests.
func (c *Coordinator) Close() {
	c.mu.Lock()
	c.mu.closed = true
	clear(c.mu.Parts)
	clear(c.mu.states)
	clear(c.mu.groups)
	c.mu.Unlock()
	c.waiters.Close()
}

func (c *Coordinator) handleRoleChanges(ctx context.Context, wg *sync.WaitGroup) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed {
		return
	}
	c.mu.ApplyRoleChangesLocked(c.host.StateReplica, c.dropLocked, func(p int32, part coordinator.OffsetsReplica, token uint64) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.load(ctx, p, part, token)
		}()
	})
}

// dropLocked forgets the states of partition p.
func (c *Coordinator) dropLocked(p int32) {
	delete(c.mu.Parts, p)
	for k := range c.mu.states {
		if c.PartitionFor(k) == p {
			delete(c.mu.states, k)
		}
	}
	c.logger.Info("stopped coordinating share states", "partition", p)
}

// partitionLock is the write lock of state partition p.
func (c *Coordinator) partitionLock(p int32) *sync.Mutex {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	m, ok := c.writing[p]
	if !ok {
		m = &sync.Mutex{}
		c.writing[p] = m
	}
	return m
}
