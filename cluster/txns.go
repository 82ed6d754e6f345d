package cluster

// The transaction coordinator: glue between the pure state machine of
// package txn and this broker's partitions of __transaction_state, shaped
// like the group coordinator (groups.go).
//
// A transactional id lives on partition abs(javaHashCode(id)) % partitions
// of __transaction_state, and the leader of that partition coordinates it.
// On becoming leader the coordinator reads the partition and rebuilds the
// transactions (COORDINATOR_LOAD_IN_PROGRESS meanwhile, txns_load.go);
// transactions found in PrepareCommit or PrepareAbort get their markers
// written again. When it stops leading, it forgets them and answers
// NOT_COORDINATOR.
//
// Every state change is one record written with acks=all (txns_store.go)
// while the transactional id is marked pending, so requests that find a
// write in flight get CONCURRENT_TRANSACTIONS; the new state is applied
// only once the write is replicated. A Prepare state hands the
// transaction to the marker sender (txns_markers.go), which writes the
// COMMIT or ABORT markers to every partition of the transaction through
// WriteTxnMarkers on their leaders, retrying across leader changes, and
// then writes the Complete state.
//
// The coordinator epoch sent with markers is the leader epoch of the
// __transaction_state partition, as in Kafka: a partition refuses markers
// of an older coordinator.
//
// # Lock order
//
// txnCoordinator.mu is never held while calling store, the purgatory, the
// producer id allocator, the host's topic creation or a log read, for the
// reasons given in groups.go. The marker sender takes it only to snapshot
// and update its jobs.
//
// Goroutines: run (role changes, the timeout and expiration sweeps), the
// marker sender and one loader per partition being loaded, all owned by
// run and stopped by its context.

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/txn"
	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/purgatory"
	"github.com/kbroker/kbroker/replication"
)

const (
	txnStateTopic = "__transaction_state"
	// txnStateWriteTimeout bounds a state write's wait for replication,
	// as offsetCommitTimeout does for group writes (Kafka's default
	// request timeout of the transaction log append, 5 s).
	txnStateWriteTimeout = 5 * time.Second
	// txnMarkerRetry is how often markers still unwritten are retried.
	txnMarkerRetry = 100 * time.Millisecond
)

// txnsHost is what the coordinator needs of the broker it runs in
// (txnsNodeHost in txns_host.go).
type txnsHost interface {
	Image() *metadata.Image
	// StateReplica is this broker's replica of partition p of
	// __transaction_state.
	StateReplica(p int32) (offsetsReplica, error)
	// CreateStateTopic creates __transaction_state and opens this
	// broker's replicas of it.
	CreateStateTopic(ctx context.Context, spec metadata.TopicSpec) error
	// AllocateProducerID hands out a cluster-wide unique producer id.
	AllocateProducerID(ctx context.Context) (int64, error)
	// WriteTxnMarkers sends req to broker (this broker included) and
	// returns its answer.
	WriteTxnMarkers(ctx context.Context, broker int32, req *kmsg.WriteTxnMarkersRequest) (*kmsg.WriteTxnMarkersResponse, error)
}

// txnsConfig is the coordinator's part of the broker config.
type txnsConfig struct {
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

type txnCoordinator struct {
	host    txnsHost
	cfg     txnsConfig
	logger  *slog.Logger
	waiters *purgatory.Purgatory[replication.TopicPartition]
	kick    chan struct{}
	// markerKick wakes the marker sender when a job is added.
	markerKick chan struct{}

	topic *internalTopic // __transaction_state

	timedOutAborts atomic.Int64 // metrics

	mu struct {
		sync.Mutex
		ledPartitions
		closed  bool
		txns    map[string]*txnEntry
		markers map[string]*markerJob
	}
}

func newTxnCoordinator(host txnsHost, cfg txnsConfig, logger *slog.Logger) *txnCoordinator {
	c := &txnCoordinator{
		host:       host,
		cfg:        cfg,
		logger:     logger.With("component", "txns"),
		waiters:    purgatory.New[replication.TopicPartition]("txns"),
		kick:       make(chan struct{}, 1),
		markerKick: make(chan struct{}, 1),
	}
	c.topic = &internalTopic{
		name:              txnStateTopic,
		partitions:        cfg.NumPartitions,
		replicationFactor: cfg.ReplicationFactor,
		minISR:            cfg.MinISR,
		image:             host.Image,
		create:            host.CreateStateTopic,
		logger:            c.logger,
	}
	c.mu.ledPartitions = newLedPartitions()
	c.mu.txns = map[string]*txnEntry{}
	c.mu.markers = map[string]*markerJob{}
	return c
}

func (c *txnCoordinator) onRoleChange(tp replication.TopicPartition) {
	if tp.Topic != txnStateTopic {
		return
	}
	c.waiters.Check(tp)
	c.mu.Lock()
	c.mu.roleChanged[tp.Partition] = true
	c.mu.Unlock()
	wake(c.kick)
}

func (c *txnCoordinator) onHighWatermark(tp replication.TopicPartition) {
	if tp.Topic == txnStateTopic {
		c.waiters.Check(tp)
	}
}

func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// run handles role changes, sends markers and aborts timed-out
// transactions until ctx ends.
func (c *txnCoordinator) run(ctx context.Context) {
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

// close answers NOT_COORDINATOR to waiting writes and refuses new requests.
func (c *txnCoordinator) close() {
	c.mu.Lock()
	c.mu.closed = true
	clear(c.mu.txns)
	clear(c.mu.parts)
	clear(c.mu.markers)
	c.mu.Unlock()
	c.waiters.Close()
}

// numPartitions is the partition count of __transaction_state.
func (c *txnCoordinator) numPartitions() int32 { return c.topic.numPartitions() }

// partitionFor is the __transaction_state partition of a transactional id.
func (c *txnCoordinator) partitionFor(id string) int32 { return c.topic.partitionFor(id) }

func (c *txnCoordinator) handleRoleChanges(ctx context.Context, wg *sync.WaitGroup) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed {
		return
	}
	c.mu.applyRoleChangesLocked(c.host.StateReplica, c.dropLocked, func(p int32, part offsetsReplica, token uint64) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.load(ctx, p, part, token)
		}()
	})
}

// dropLocked forgets the transactions of partition p and their markers
// still to write (the new coordinator writes them again).
func (c *txnCoordinator) dropLocked(p int32) {
	delete(c.mu.parts, p)
	n := c.numPartitions()
	for id := range c.mu.txns {
		if groupPartition(id, n) == p {
			delete(c.mu.txns, id)
			delete(c.mu.markers, id)
		}
	}
	c.logger.Info("stopped coordinating transactions", "partition", p)
}

// entryLocked finds the transactional id's entry if this broker
// coordinates it (nil, nil when unknown), and the coordinator epoch.
func (c *txnCoordinator) entryLocked(id string) (*txnEntry, int32, error) {
	if c.mu.closed {
		return nil, 0, kerr.NotCoordinator
	}
	st, ok := c.mu.parts[c.partitionFor(id)]
	switch {
	case !ok:
		return nil, 0, kerr.NotCoordinator
	case st.loading:
		return nil, 0, kerr.CoordinatorLoadInProgress
	}
	return c.mu.txns[id], st.leaderEpoch, nil
}

// openTransactions counts Ongoing transactions (metrics).
func (c *txnCoordinator) openTransactions() int {
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
