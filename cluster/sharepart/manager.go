package sharepart

// The Manager: the share-partitions this broker leads, by share group,
// with their persisted state, their lock timer, and the share sessions
// of the members fetching from it.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/cluster/share"
	"github.com/kbroker/kbroker/purgatory"
	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/storage"
)

// lockTick is how often acquisition locks are checked for their end.
const lockTick = 100 * time.Millisecond

// Replica is this broker's replica of a topic partition, as a share
// fetch reads it.
type Replica interface {
	IsLeader() bool
	LeaderEpoch() int32
	LogStartOffset() int64
	HighWatermark() int64
	LastStableOffset() int64
	// Read reads whole batches from offset below upperBound, at most
	// maxBytes but at least one batch.
	Read(offset int64, maxBytes int, upperBound int64) ([]byte, error)
	AbortedTransactions(from, to int64) ([]storage.AbortedTxn, error)
}

// Persister reaches the share coordinator of a share-partition (the
// state APIs 83–87 of the broker leading its __share_group_state
// partition, or this broker's own coordinator). Read of a
// share-partition without state is kerr.UnknownTopicOrPartition.
type Persister interface {
	Read(ctx context.Context, k share.StateKey, leaderEpoch int32) (share.Snapshot, error)
	Write(ctx context.Context, k share.StateKey, leaderEpoch int32, s share.Snapshot) error
	Initialize(ctx context.Context, k share.StateKey, stateEpoch int32, startOffset int64) error
}

// Settings are one share group's settings a share-partition follows.
type Settings struct {
	Partition     share.Config
	Earliest      bool // share.auto.offset.reset=earliest
	ReadCommitted bool // share.isolation.level=read_committed
}

// Host is what the manager needs of the broker.
type Host interface {
	// Replica is the replica of topic id's partition p and its name;
	// replication.ErrNotLeader or replication.ErrUnknownTopicOrPartition
	// (or kerr.UnknownTopicID) when it is not led here.
	Replica(topicID [16]byte, p int32) (Replica, string, error)
	// Settings are group's settings (its GROUP configs over the
	// broker's group.share.* keys).
	Settings(group string) Settings
}

// partKey names one share-partition.
type partKey = share.StateKey

// sharePartition is one share-partition this broker leads. mu
// serialises its operations, persistence included, so the persisted
// state follows the in-memory one in order.
type sharePartition struct {
	key         partKey
	topic       string
	leaderEpoch int32
	mu          sync.Mutex
	p           *share.Partition
	// nextFetch is p.FetchOffset() as of the last operation, for the
	// delayed fetches' check without mu.
	nextFetch atomic.Int64
	// dropped is set once the manager forgot it (leadership moved,
	// state fenced): an operation that finds it set starts over.
	dropped atomic.Bool
}

// Manager is the share-partition leader of one broker (Kafka's
// SharePartitionManager).
type Manager struct {
	host      Host
	persister Persister
	logger    *slog.Logger
	waiters   *purgatory.Purgatory[replication.TopicPartition]

	mu struct {
		sync.Mutex
		closed   bool
		parts    map[partKey]*sharePartition
		sessions map[sessionKey]*session
	}
}

// New is a manager; delayed share fetches wait in waiters (the fetch
// purgatory, keyed by topic partition and checked on appends).
func New(host Host, persister Persister, waiters *purgatory.Purgatory[replication.TopicPartition], logger *slog.Logger) *Manager {
	m := &Manager{host: host, persister: persister, waiters: waiters, logger: logger.With("component", "share-partitions")}
	m.mu.parts = map[partKey]*sharePartition{}
	m.mu.sessions = map[sessionKey]*session{}
	return m
}

// Run ends acquisition locks on time until ctx ends.
func (m *Manager) Run(ctx context.Context) {
	t := time.NewTicker(lockTick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			m.expireLocks(ctx, now)
		}
	}
}

// Close forgets every share-partition and session.
func (m *Manager) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mu.closed = true
	for _, sp := range m.mu.parts {
		sp.dropped.Store(true)
	}
	clear(m.mu.parts)
	clear(m.mu.sessions)
}

func (m *Manager) all() []*sharePartition {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*sharePartition, 0, len(m.mu.parts))
	for _, sp := range m.mu.parts {
		out = append(out, sp)
	}
	return out
}

// expireLocks releases the records whose lock ended, persisting what
// changed (a record archived at its delivery limit).
func (m *Manager) expireLocks(ctx context.Context, now time.Time) {
	for _, sp := range m.all() {
		sp.mu.Lock()
		if sp.dropped.Load() {
			sp.mu.Unlock()
			continue
		}
		released := false
		err := m.change(ctx, sp, func(p *share.Partition) error {
			released, _ = p.ExpireLocks(now)
			return nil
		})
		sp.mu.Unlock()
		if err != nil {
			m.logger.Debug("persisting expired locks", "group", sp.key.Group, "topic", sp.topic, "partition", sp.key.Partition, "err", err)
		}
		if released {
			m.waiters.Check(replication.TopicPartition{Topic: sp.topic, Partition: sp.key.Partition})
		}
	}
}

// drop forgets sp: its leadership or its state moved on.
func (m *Manager) drop(sp *sharePartition) {
	m.mu.Lock()
	defer m.mu.Unlock()
	sp.dropped.Store(true)
	if m.mu.parts[sp.key] == sp {
		delete(m.mu.parts, sp.key)
	}
}

// partition is the share-partition k this broker leads, loaded from its
// persisted state (or started per share.auto.offset.reset) on first use
// and again after the leadership or the state epoch moved. It is
// returned with its mu held.
func (m *Manager) partition(ctx context.Context, k partKey) (*sharePartition, Replica, error) {
	rep, topic, err := m.host.Replica(k.TopicID, k.Partition)
	if err != nil {
		return nil, nil, err
	}
	if !rep.IsLeader() {
		return nil, nil, replication.ErrNotLeader
	}
	for range 3 {
		m.mu.Lock()
		if m.mu.closed {
			m.mu.Unlock()
			return nil, nil, replication.ErrNotLeader
		}
		sp := m.mu.parts[k]
		if sp != nil && sp.leaderEpoch != rep.LeaderEpoch() {
			sp.dropped.Store(true)
			delete(m.mu.parts, k)
			sp = nil
		}
		if sp == nil {
			sp = &sharePartition{key: k, topic: topic, leaderEpoch: rep.LeaderEpoch()}
			m.mu.parts[k] = sp
		}
		m.mu.Unlock()
		sp.mu.Lock()
		if sp.dropped.Load() {
			sp.mu.Unlock()
			continue
		}
		if sp.p == nil {
			if err := m.load(ctx, sp, rep); err != nil {
				sp.mu.Unlock()
				m.drop(sp)
				return nil, nil, err
			}
		}
		return sp, rep, nil
	}
	return nil, nil, fmt.Errorf("%w: share-partition kept moving", kerr.CoordinatorLoadInProgress)
}

// load reads sp's state from its share coordinator, or initializes it
// at the offset share.auto.offset.reset picks. sp.mu is held.
func (m *Manager) load(ctx context.Context, sp *sharePartition, rep Replica) error {
	set := m.host.Settings(sp.key.Group)
	snap, err := m.persister.Read(ctx, sp.key, sp.leaderEpoch)
	switch {
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		start := rep.HighWatermark()
		if set.Earliest {
			start = rep.LogStartOffset()
		}
		if err := m.persister.Initialize(ctx, sp.key, 0, start); err != nil && !errors.Is(err, kerr.FencedStateEpoch) {
			return fmt.Errorf("initializing share-partition state: %w", err)
		}
		// Read back what was initialized (by this call or a racing one).
		if snap, err = m.persister.Read(ctx, sp.key, sp.leaderEpoch); err != nil {
			return fmt.Errorf("reading share-partition state: %w", err)
		}
	case err != nil:
		return fmt.Errorf("reading share-partition state: %w", err)
	}
	p, err := share.Restore(set.Partition, snap)
	if err != nil {
		m.logger.Warn("share-partition state refused: starting at its start offset", "group", sp.key.Group, "topic", sp.topic, "partition", sp.key.Partition, "err", err)
		p = share.New(set.Partition, snap.StartOffset)
	}
	p.AdvanceTo(rep.LogStartOffset())
	sp.p = p
	sp.nextFetch.Store(p.FetchOffset())
	return nil
}

// change applies f to sp's state and persists the result if the
// persisted state changed; if it cannot be persisted, the in-memory
// state is rolled back and the error returned (the client is told its
// acknowledgement or fetch failed, and nothing it was not told of
// happened). A fenced state (an admin reset the share-partition, or a
// newer leader read it) drops sp. sp.mu is held.
func (m *Manager) change(ctx context.Context, sp *sharePartition, f func(p *share.Partition) error) error {
	before := sp.p.Clone()
	if err := f(sp.p); err != nil {
		sp.p = before
		return err
	}
	defer func() { sp.nextFetch.Store(sp.p.FetchOffset()) }()
	after := sp.p.Snapshot()
	if sameSnapshot(before.Snapshot(), after) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := m.persister.Write(ctx, sp.key, sp.leaderEpoch, after); err != nil {
		sp.p = before
		if errors.Is(err, kerr.FencedStateEpoch) || errors.Is(err, kerr.FencedLeaderEpoch) {
			sp.dropped.Store(true)
			m.mu.Lock()
			if m.mu.parts[sp.key] == sp {
				delete(m.mu.parts, sp.key)
			}
			m.mu.Unlock()
		}
		return fmt.Errorf("persisting share-partition state: %w", err)
	}
	return nil
}

func sameSnapshot(a, b share.Snapshot) bool {
	return a.StateEpoch == b.StateEpoch && a.StartOffset == b.StartOffset && slices.Equal(a.Batches, b.Batches)
}
