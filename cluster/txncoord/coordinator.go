package txncoord

// The Coordinator type: its host, its config, its goroutine and the
// leadership of the __transaction_state partitions (see doc.go).

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/coordinator"
	"github.com/kbroker/kbroker/cluster/txn"
	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/purgatory"
	"github.com/kbroker/kbroker/replication"
)

const (
	// StateTopic is the topic the transactions are kept in.
	StateTopic = "__transaction_state"
	// txnStateWriteTimeout bounds a state write's wait for replication,
	// as offsetCommitTimeout does for group writes (Kafka's default
	// request timeout of the transaction log append, 5 s).
	txnStateWriteTimeout = 5 * time.Second
	// txnMarkerRetry is how often markers still unwritten are retried.
	txnMarkerRetry = 100 * time.Millisecond
	// stateLoadBufferSize is transaction.state.log.load.buffer.size'
	// default.
	stateLoadBufferSize = 5 << 20
)

// Host is what the coordinator needs of the broker it runs in
// (cluster's txnsNodeHost). Leadership changes come the other way: the
// host calls OnRoleChange and OnHighWatermark. The coordinator never
// holds its lock while calling the host: CreateStateTopic,
// AllocateProducerID and WriteTxnMarkers may block (on the controller,
// on another broker), and a WriteTxnMarkers to this broker appends to
// local logs.
type Host interface {
	Image() *metadata.Image
	// StateReplica is this broker's replica of partition p of
	// __transaction_state.
	StateReplica(p int32) (coordinator.OffsetsReplica, error)
	// CreateStateTopic creates __transaction_state and opens this
	// broker's replicas of it.
	CreateStateTopic(ctx context.Context, spec metadata.TopicSpec) error
	// AllocateProducerID hands out a cluster-wide unique producer id.
	AllocateProducerID(ctx context.Context) (int64, error)
	// WriteTxnMarkers sends req to broker (this broker included) and
	// returns its answer.
	WriteTxnMarkers(ctx context.Context, broker int32, req *kmsg.WriteTxnMarkersRequest) (*kmsg.WriteTxnMarkersResponse, error)
}

// Config is the coordinator's part of the broker config.
type Config struct {
	NumPartitions     int32
	ReplicationFactor int16
	MinISR            int32
	MaxTimeout        time.Duration
	IDExpiration      time.Duration
	AbortInterval     time.Duration
}

// txnEntry is one transactional id this broker coordinates.
type txnEntry struct {
	meta    *txn.Metadata
	pending bool // a state write is in flight
}

// Coordinator is the transaction coordinator of one broker: it
// coordinates the transactional ids of the __transaction_state
// partitions the broker leads.
type Coordinator struct {
	host    Host
	cfg     Config
	logger  *slog.Logger
	waiters *purgatory.Purgatory[replication.TopicPartition]
	kick    chan struct{}
	// markerKick wakes the marker sender when a job is added.
	markerKick chan struct{}

	topic *coordinator.InternalTopic // __transaction_state

	timedOutAborts atomic.Int64 // metrics

	mu struct {
		sync.Mutex
		coordinator.LedPartitions
		closed  bool
		txns    map[string]*txnEntry
		markers map[string]*markerJob
	}
}

// New is a coordinator on host; Run starts it.
func New(host Host, cfg Config, logger *slog.Logger) *Coordinator {
	c := &Coordinator{
		host:       host,
		cfg:        cfg,
		logger:     logger.With("component", "txns"),
		waiters:    purgatory.New[replication.TopicPartition]("txns"),
		kick:       make(chan struct{}, 1),
		markerKick: make(chan struct{}, 1),
	}
	c.topic = &coordinator.InternalTopic{
		Name:              StateTopic,
		Partitions:        cfg.NumPartitions,
		ReplicationFactor: cfg.ReplicationFactor,
		MinISR:            cfg.MinISR,
		Image:             host.Image,
		Create:            host.CreateStateTopic,
		Logger:            c.logger,
	}
	c.mu.LedPartitions = coordinator.NewLedPartitions()
	c.mu.txns = map[string]*txnEntry{}
	c.mu.markers = map[string]*markerJob{}
	return c
}

// OnRoleChange is chained into the replica manager's OnRoleChange hook.
func (c *Coordinator) OnRoleChange(tp replication.TopicPartition) {
	if tp.Topic != StateTopic {
		return
	}
	c.waiters.Check(tp)
	c.mu.Lock()
	c.mu.RoleChanged[tp.Partition] = true
	c.mu.Unlock()
	coordinator.Wake(c.kick)
}

// OnHighWatermark is chained into the OnHighWatermark hook.
func (c *Coordinator) OnHighWatermark(tp replication.TopicPartition) {
	if tp.Topic == StateTopic {
		c.waiters.Check(tp)
	}
}

// Run handles role changes, sends markers and aborts timed-out
// transactions until ctx ends.
func (c *Coordinator) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() { defer wg.Done(); c.sendMarkers(ctx) }()
	abort := time.NewTicker(c.cfg.AbortInterval)
	defer abort.Stop()
	c.handleRoleChanges(ctx, &wg)
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.kick:
			c.handleRoleChanges(ctx, &wg)
		case now := <-abort.C:
			c.abortTimedOut(now)
			c.expireIDs(now)
		}
	}
}

// Close answers NOT_COORDINATOR to waiting writes and refuses new requests.
func (c *Coordinator) Close() {
	c.mu.Lock()
	c.mu.closed = true
	clear(c.mu.txns)
	clear(c.mu.Parts)
	clear(c.mu.markers)
	c.mu.Unlock()
	c.waiters.Close()
}

// numPartitions is the partition count of __transaction_state.
func (c *Coordinator) numPartitions() int32 { return c.topic.NumPartitions() }

// Topic is __transaction_state, for FindCoordinator.
func (c *Coordinator) Topic() *coordinator.InternalTopic { return c.topic }

// TimedOutAborts counts the transactions aborted for their timeout
// (metrics).
func (c *Coordinator) TimedOutAborts() int64 { return c.timedOutAborts.Load() }

// PartitionFor is the __transaction_state partition of a transactional id.
func (c *Coordinator) PartitionFor(id string) int32 { return c.topic.PartitionFor(id) }

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

// dropLocked forgets the transactions of partition p and their markers
// still to write (the new coordinator writes them again).
func (c *Coordinator) dropLocked(p int32) {
	delete(c.mu.Parts, p)
	n := c.numPartitions()
	for id := range c.mu.txns {
		if coordinator.PartitionFor(id, n) == p {
			delete(c.mu.txns, id)
			delete(c.mu.markers, id)
		}
	}
	c.logger.Info("stopped coordinating transactions", "partition", p)
}

// entryLocked finds the transactional id's entry if this broker
// coordinates it (nil, nil when unknown), and the coordinator epoch.
func (c *Coordinator) entryLocked(id string) (*txnEntry, int32, error) {
	if c.mu.closed {
		return nil, 0, kerr.NotCoordinator
	}
	st, ok := c.mu.Parts[c.PartitionFor(id)]
	switch {
	case !ok:
		return nil, 0, kerr.NotCoordinator
	case st.Loading:
		return nil, 0, kerr.CoordinatorLoadInProgress
	}
	return c.mu.txns[id], st.LeaderEpoch, nil
}

// OpenTransactions counts Ongoing transactions (metrics).
func (c *Coordinator) OpenTransactions() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, e := range c.mu.txns {
		if e.meta != nil && e.meta.State == txn.Ongoing {
			n++
		}
	}
	return n
}
