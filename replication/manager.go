package replication

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/internal/quota"
	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/storage"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ImageSource is the part of the metadata store the manager follows.
type ImageSource interface {
	Image() *metadata.Image
	Changed() <-chan struct{}
}

// ManagerConfig configures a Manager.
type ManagerConfig struct {
	NodeID int32
	Logs   *storage.Manager
	Logger *slog.Logger
	// TopicConfig resolves a topic's config overrides against the broker's
	// defaults.
	TopicConfig func(overrides map[string]string) config.TopicConfig

	// PartitionCapacity caps the replicas open at once (the capacity the
	// broker registered, cluster capacity.go); 0 is no cap. A broker
	// restarted under a lower file-descriptor limit than its replicas
	// need then keeps descriptors for connections, raft and segment rolls
	// instead of spending the last of them on logs: the replicas beyond
	// the cap are offline (offline.go).
	PartitionCapacity int64

	// InterBrokerListener names the listener whose endpoint (from the
	// metadata image) followers dial.
	InterBrokerListener string
	// ReplicaFetchMaxBytes is replica.fetch.max.bytes, per partition.
	ReplicaFetchMaxBytes int32
	// ReplicaFetchWaitMax is replica.fetch.wait.max.ms.
	ReplicaFetchWaitMax time.Duration
	// ReplicaLagTimeMax is replica.lag.time.max.ms.
	ReplicaLagTimeMax time.Duration
	// ISR proposes ISR changes to the controller; nil: changes are not
	// proposed (single-node tests).
	ISR ISRChanger

	// Hooks, called never under a lock, so the node can wake its
	// purgatories. Any may be nil.
	OnHighWatermark func(tp TopicPartition) // the partition's high watermark moved (leader or follower)
	OnLogAppend     func(tp TopicPartition) // the leader's log end offset moved (wakes follower fetches)
	OnRoleChange    func(tp TopicPartition) // leadership or leader epoch changed (waiting produces re-check)
	// OnLeaderUnreachable: the connection to a leader broke or dialing it
	// failed; refused says nothing listens there (the process is likely
	// gone). The node marks the leader for its Metadata answers and, when
	// refused, reports it to the controller, which checks and fences at
	// once, seconds before gossip or the session timeout would.
	// OnLeaderReachable: a fetch from it succeeded again. Both are called
	// on the fetcher's goroutine and must not block.
	OnLeaderUnreachable func(leader int32, refused bool)
	OnLeaderReachable   func(leader int32)
	// OnLogDirFailure: a log directory went offline and its partitions
	// were taken offline (logdir.go); the node reports them to the
	// controller at once, and shuts down when no directory is left.
	OnLogDirFailure func()

	// Current reports whether img holds everything the metadata quorum
	// had committed when this broker started (the node: an image at or
	// past the offset its start waited for, metadata WaitReady). The
	// first current image applied removes the stray logs found on disk
	// (stray.go); only a current image replaces a log of another topic id
	// or adopts an old log without one. nil: no image is current, so
	// nothing on disk is removed but the partitions opened in this run,
	// and those logs are refused (the replica is offline).
	Current func(img *metadata.Image) bool
	// MetadataLogDir is the metadata (Raft) log's directory, never taken
	// for a stray partition log when it sits in a log dir.
	MetadataLogDir string

	// Dialer connects followers to leaders; nil: TCP to the leader's
	// endpoint on InterBrokerListener.
	Dialer LeaderDialer

	// ThrottledRates gives the leader and follower replication throttle
	// rates (bytes/s) in effect under an image; nil: none (throttle.go).
	ThrottledRates func(img *metadata.Image) (leader, follower int64)
	// NoFetchSessions makes the fetchers send full requests without a
	// fetch session (KIP-227; SessionEpoch -1), as before sessions.
	NoFetchSessions bool

	// ReplicationQuota is the window the throttle rates are measured over
	// (replication.quota.window.*); zero: Kafka's 11 samples of 1 s.
	ReplicationQuota quota.Config
}

// ISRChanger proposes partition changes to the controller, with
// AlterPartition semantics: a change based on a stale partition epoch
// fails, and a change takes effect only when the metadata image applies
// it (the manager sees it in Apply).
type ISRChanger interface {
	ChangePartition(ctx context.Context, c metadata.PartitionChange) error
}

// LeaderDialer connects a follower to a leader. Tests use it to connect a
// follower Manager straight to a leader Manager in memory.
type LeaderDialer interface {
	Dial(ctx context.Context, leader int32, ep metadata.Endpoint) (LeaderConn, error)
}

// LeaderConn is a connection to a leader. A fetcher runs its Fetch on a
// goroutine of its own and may meanwhile call OffsetForLeaderEpoch (the
// TCP dialer's client sends it on another connection, so it does not wait
// behind a Fetch waiting at the leader); it uses a second LeaderConn for
// its side fetches (fetcher run). A call returns when ctx ends or the
// connection is closed.
type LeaderConn interface {
	Fetch(ctx context.Context, req *kmsg.FetchRequest) (*kmsg.FetchResponse, error)
	OffsetForLeaderEpoch(ctx context.Context, req *kmsg.OffsetForLeaderEpochRequest) (*kmsg.OffsetForLeaderEpochResponse, error)
	Close() error
}

// Manager holds the partitions this broker hosts and keeps their roles in
// line with the metadata image.
type Manager struct {
	cfg   ManagerConfig
	hooks *hooks
	// isrShrinks and isrExpands count committed ISR changes (metrics).
	isrShrinks, isrExpands atomic.Uint64
	// fetchStats counts the fetchers' requests (metrics).
	fetchStats fetchStats
	// leaderThrottle and followerThrottle are the replication throttles
	// (throttle.go).
	leaderThrottle, followerThrottle *replicationThrottle
	// isrQueue holds the ISR changes for the next AlterPartition request
	// (alter_partition.go).
	isrQueue isrQueue
	// skipEpochRequest (tests only) makes a new follower fetch at once
	// and rely on diverging-epoch responses (KIP-320) to truncate.
	skipEpochRequest bool

	mu struct {
		sync.RWMutex
		partitions map[TopicPartition]*Partition
		// offline are replicas this broker should host whose log failed
		// to open (offline.go), with the error; Apply retries them.
		offline map[TopicPartition]error
		// corrupt are the replicas that stopped leading for a corrupt
		// batch, with the offset to truncate to before they follow
		// (corrupt.go); also in offline.
		corrupt map[TopicPartition]int64
		applied uint64          // image offset last applied
		image   *metadata.Image // image last applied
		// strayChecked: the stray logs were removed, at the first
		// current image (stray.go).
		strayChecked bool
		// fetchers, by leader id, and which fetcher serves each
		// follower partition (only while Run runs).
		fetchers map[int32]*fetcher
		assigned map[TopicPartition]assignment
		// moves are the log directories partitions are being moved to
		// (AlterReplicaLogDirs, logdir.go), while their mover runs.
		moves map[TopicPartition]string
	}

	// run is Run's context and the goroutines it owns (fetchers, ISR
	// proposals); ctx is nil when Run is not running.
	run struct {
		sync.Mutex
		ctx context.Context
		wg  sync.WaitGroup
	}
}

// assignment is the leader and leader epoch a follower partition fetches
// under.
type assignment struct {
	leader, epoch int32
}

// NewManager returns a manager with no partitions; Apply or Run fills it.
// Zero durations and sizes in cfg get Kafka's defaults.
func NewManager(cfg ManagerConfig) *Manager {
	if cfg.ReplicaFetchMaxBytes <= 0 {
		cfg.ReplicaFetchMaxBytes = 1 << 20
	}
	if cfg.ReplicaFetchWaitMax <= 0 {
		cfg.ReplicaFetchWaitMax = 500 * time.Millisecond
	}
	if cfg.ReplicaLagTimeMax <= 0 {
		cfg.ReplicaLagTimeMax = 30 * time.Second
	}
	if cfg.Dialer == nil {
		cfg.Dialer = TCPDialer{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	m := &Manager{cfg: cfg, hooks: &hooks{
		onHighWatermark: cfg.OnHighWatermark,
		onLogAppend:     cfg.OnLogAppend,
		onRoleChange:    cfg.OnRoleChange,
		onUnreachable:   cfg.OnLeaderUnreachable,
		onReachable:     cfg.OnLeaderReachable,
	}}
	m.leaderThrottle = newReplicationThrottle(cfg.ReplicationQuota)
	m.followerThrottle = newReplicationThrottle(cfg.ReplicationQuota)
	m.mu.partitions = make(map[TopicPartition]*Partition)
	m.mu.offline = make(map[TopicPartition]error)
	m.mu.corrupt = make(map[TopicPartition]int64)
	m.mu.fetchers = make(map[int32]*fetcher)
	m.mu.assigned = make(map[TopicPartition]assignment)
	m.mu.moves = make(map[TopicPartition]string)
	return m
}

// spawn runs f in a goroutine owned by Run, with Run's context. It reports
// false, and runs nothing, when Run is not running.
func (m *Manager) spawn(f func(ctx context.Context)) bool {
	m.run.Lock()
	defer m.run.Unlock()
	if m.run.ctx == nil {
		return false
	}
	ctx := m.run.ctx
	m.run.wg.Add(1)
	go func() {
		defer m.run.wg.Done()
		f(ctx)
	}()
	return true
}

// running returns Run's context, or nil.
func (m *Manager) running() context.Context {
	m.run.Lock()
	defer m.run.Unlock()
	return m.run.ctx
}

// Partition returns a hosted partition.
func (m *Manager) Partition(tp TopicPartition) (*Partition, error) {
	m.mu.RLock()
	p, ok := m.mu.partitions[tp]
	m.mu.RUnlock()
	if !ok {
		return nil, m.missingErr(tp)
	}
	return p, nil
}

// LeaderPartition returns a partition this broker leads.
func (m *Manager) LeaderPartition(tp TopicPartition) (*Partition, error) {
	p, err := m.Partition(tp)
	if err != nil {
		return nil, err
	}
	if !p.IsLeader() {
		return nil, ErrNotLeader
	}
	return p, nil
}

// Partitions returns every hosted partition, in no particular order.
func (m *Manager) Partitions() []*Partition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*Partition, 0, len(m.mu.partitions))
	for _, p := range m.mu.partitions {
		out = append(out, p)
	}
	return out
}

// Run applies every new metadata image until ctx is cancelled. It owns
// the replica fetchers (one per leader this broker follows) and the ISR
// shrink checker; it returns after they have all stopped.
func (m *Manager) Run(ctx context.Context, src ImageSource) {
	ctx, cancel := context.WithCancel(ctx)
	m.run.Lock()
	m.run.ctx = ctx
	m.run.Unlock()
	defer func() {
		m.run.Lock()
		m.run.ctx = nil
		m.run.Unlock()
		cancel()
		m.run.wg.Wait()
		m.mu.Lock()
		clear(m.mu.fetchers)
		clear(m.mu.assigned)
		m.mu.Unlock()
	}()
	m.spawn(m.runISRChecker)
	// Partitions that became followers before Run started.
	m.mu.Lock()
	m.reconcileFetchersLocked()
	m.mu.Unlock()
	var dirFailures, corruptions <-chan struct{}
	if m.cfg.Logs != nil {
		dirFailures, corruptions = m.cfg.Logs.DirFailures(), m.cfg.Logs.Corruptions().Signal()
	}
	for {
		changed := src.Changed()
		if err := m.Apply(src.Image()); err != nil {
			m.cfg.Logger.Error("applying metadata image", "err", err)
			// Retry later rather than spin: a disk error will not fix
			// itself in a millisecond.
			select {
			case <-time.After(time.Second):
			case <-ctx.Done():
				return
			}
			continue
		}
		select {
		case <-changed:
		case <-dirFailures:
			m.handleLogDirFailure()
		case <-corruptions:
			m.handleCorruption()
		case <-ctx.Done():
			return
		}
	}
}

// Apply makes the hosted partitions match img: it opens or creates the log
// of every partition that lists this broker as a replica, updates its
// leader, leader epoch and ISR, and removes partitions whose topic is gone
// or that no longer list this broker. It is idempotent and safe to call
// from several goroutines (handlers call it to see a topic they just
// created without waiting for Run).
func (m *Manager) Apply(img *metadata.Image) error {
	changed, hw, err := m.apply(img)
	for _, tp := range changed {
		m.hooks.roleChange(tp)
	}
	for _, tp := range hw {
		m.hooks.highWatermark(tp)
	}
	return err
}

func (m *Manager) apply(img *metadata.Image) (roleChanged, hwMoved []TopicPartition, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if img.Offset != 0 && img.Offset <= m.mu.applied {
		return nil, nil, nil
	}
	m.mu.image = img
	now := time.Now()
	if m.cfg.ThrottledRates != nil {
		l, f := m.cfg.ThrottledRates(img)
		m.leaderThrottle.setBound(l)
		m.followerThrottle.setBound(f)
	}
	// Whatever happens below, the fetchers follow the partitions' roles.
	defer m.reconcileFetchersLocked()
	want := make(map[TopicPartition]bool)
	var errs []error
	current := m.cfg.Current != nil && m.cfg.Current(img)
	if current && !m.mu.strayChecked && m.cfg.Logs != nil {
		// Before anything is opened, so that a stale log is never
		// adopted; retried with the next image if a removal failed.
		if err := m.removeStrayLogsLocked(img); err != nil {
			errs = append(errs, err)
		} else {
			m.mu.strayChecked = true
		}
	}
	for _, t := range img.Topics {
		cfg := m.cfg.TopicConfig(t.Configs)
		for _, mp := range t.Partitions {
			if !slices.Contains(mp.Replicas, m.cfg.NodeID) {
				continue
			}
			tp := TopicPartition{Topic: t.Name, Partition: mp.ID}
			want[tp] = true
			p, ok := m.mu.partitions[tp]
			if ok && p.TopicID != t.ID {
				// The topic was deleted and re-created under the same name.
				if err := m.removeLocked(tp); err != nil {
					errs = append(errs, err)
					continue
				}
				ok = false
			}
			if !ok {
				truncateTo, corrupt, reopen := m.reopenCorruptLocked(tp, mp.Leader)
				if !reopen {
					continue // offline until another replica leads (corrupt.go)
				}
				if c := m.cfg.PartitionCapacity; c > 0 && int64(len(m.mu.partitions)) >= c {
					errs = append(errs, m.markOfflineLocked(tp, fmt.Errorf("%w (%d replicas)", ErrBeyondCapacity, c)))
					continue
				}
				// The log's partition.metadata must name t.ID: a log of
				// an older topic of this name is replaced by an empty one
				// (or, under an image not known current, refused).
				log, err := m.cfg.Logs.GetOrCreateTopic(tp.Topic, tp.Partition, t.ID, current, logConfig(cfg))
				if errors.Is(err, storage.ErrLogDirOffline) {
					// Its directory failed: offline until a restart
					// with the disk back; not an error to retry.
					m.markDirOfflineLocked(tp, err)
					continue
				}
				if err == nil && corrupt {
					if err = log.TruncateTo(truncateTo); err == nil {
						delete(m.mu.corrupt, tp)
						m.cfg.Logger.Info("replica back after a corrupt batch: truncated to it, following", "topic", tp.Topic, "partition", tp.Partition, "offset", truncateTo)
					}
				}
				if err != nil {
					errs = append(errs, m.markOfflineLocked(tp, err))
					continue
				}
				delete(m.mu.offline, tp)
				p = &Partition{TP: tp, TopicID: t.ID, log: log, nodeID: m.cfg.NodeID, hooks: m.hooks,
					logger: m.cfg.Logger.With("topic", tp.Topic, "partition", tp.Partition)}
				p.mu.followerLEO = make(map[int32]int64)
				p.mu.followers = make(map[int32]*followerState)
				// No role yet: the first update is a role change.
				p.mu.leader, p.mu.leaderEpoch = metadata.NoLeader, -1
				// Start from the checkpointed high watermark so a restarted
				// leader never exposes less than it had committed.
				p.highWatermark.Store(log.HighWatermarkCheckpoint())
				m.mu.partitions[tp] = p
			}
			if ok && p.State().Config != cfg {
				// A topic config change applies to the open log at once
				// (retention, segment size, cleaning, max.message.bytes).
				if err := p.log.SetConfig(logConfig(cfg)); err != nil {
					errs = append(errs, fmt.Errorf("updating log config of %s: %w", tp, err))
				}
			}
			p.leaderThrottled.Store(throttledReplica(cfg.LeaderReplicationThrottledReplicas, mp.ID, m.cfg.NodeID))
			p.followerThrottled.Store(throttledReplica(cfg.FollowerReplicationThrottledReplicas, mp.ID, m.cfg.NodeID))
			rc := p.update(mp.Leader, mp.LeaderEpoch, mp.PartitionEpoch, mp.Replicas, mp.ISR, cfg, now)
			if rc.leaderOrEpoch {
				roleChanged = append(roleChanged, tp)
			}
			if rc.hwMoved {
				hwMoved = append(hwMoved, tp)
			}
		}
	}
	for tp, oerr := range m.mu.offline {
		if !want[tp] {
			delete(m.mu.offline, tp)
			delete(m.mu.corrupt, tp)
			// Never opened in this run, so not removed below: its log
			// would stay on disk (an offline dir's is left alone).
			if current && !errors.Is(oerr, storage.ErrLogDirOffline) {
				if err := m.removeUnopenedLocked(tp); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	for tp := range m.mu.partitions {
		if !want[tp] {
			roleChanged = append(roleChanged, tp)
			if err := m.removeLocked(tp); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return roleChanged, hwMoved, err
	}
	m.mu.applied = img.Offset
	return roleChanged, hwMoved, nil
}

func (m *Manager) removeLocked(tp TopicPartition) error {
	if p, ok := m.mu.partitions[tp]; ok {
		// Requests still holding the partition (a waiting acks=all
		// produce) must see that this broker no longer leads it; Apply
		// fires OnRoleChange for removed partitions once unlocked.
		p.mu.Lock()
		p.mu.leader = metadata.NoLeader
		p.mu.Unlock()
	}
	delete(m.mu.partitions, tp)
	if err := m.cfg.Logs.Delete(tp.Topic, tp.Partition); err != nil {
		return fmt.Errorf("deleting log %s: %w", tp, err)
	}
	m.cfg.Logger.Info("removed partition", "topic", tp.Topic, "partition", tp.Partition)
	return nil
}

// logConfig maps a topic's resolved config to its log's.
func logConfig(c config.TopicConfig) storage.LogConfig {
	lc := storage.DefaultLogConfig()
	lc.SegmentBytes = c.SegmentBytes
	lc.SegmentAge = time.Duration(c.SegmentMs) * time.Millisecond
	lc.IndexIntervalBytes = int(c.IndexIntervalBytes)
	lc.SegmentIndexBytes = int(c.SegmentIndexBytes)
	lc.MaxMessageBytes = int(c.MaxMessageBytes)
	lc.FlushMessages = c.FlushMessages
	if Durable(c) {
		// The replication path fsyncs with group commit (Log.SyncTo)
		// instead of once inside every append.
		lc.FlushMessages = 0
	}
	lc.CleanupPolicy = c.CleanupPolicy
	lc.CompressionType = c.CompressionType
	lc.MessageTimestampType = c.MessageTimestampType
	lc.MessageTimestampBeforeMaxMs = c.MessageTimestampBeforeMaxMs
	lc.MessageTimestampAfterMaxMs = c.MessageTimestampAfterMaxMs
	lc.RetentionMs = c.RetentionMs
	lc.RetentionBytes = c.RetentionBytes
	lc.RemoteStorageEnable = c.RemoteStorageEnable
	lc.LocalRetentionMs = c.LocalRetentionMs
	lc.LocalRetentionBytes = c.LocalRetentionBytes
	lc.MinCleanableDirtyRatio = c.MinCleanableDirtyRatio
	lc.DeleteRetentionMs = c.DeleteRetentionMs
	lc.MinCompactionLagMs = c.MinCompactionLagMs
	lc.MaxCompactionLagMs = c.MaxCompactionLagMs
	lc.SegmentJitter = time.Duration(min(c.SegmentJitterMs, int64(time.Duration(1<<62)/time.Millisecond))) * time.Millisecond
	lc.FileDeleteDelayMs = c.FileDeleteDelayMs
	lc.Preallocate = c.Preallocate
	lc.CompressionGzipLevel = int(c.CompressionGzipLevel)
	lc.CompressionLz4Level = int(c.CompressionLz4Level)
	lc.CompressionZstdLevel = int(c.CompressionZstdLevel)
	if c.FlushMs > 0 && c.FlushMs < int64(time.Duration(1<<62)/time.Millisecond) {
		lc.FlushInterval = time.Duration(c.FlushMs) * time.Millisecond
	}
	return lc
}
