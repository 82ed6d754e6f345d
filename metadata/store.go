package metadata

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// Voter is a member of the metadata quorum.
type Voter struct {
	ID   int32
	Addr string // host:port of its raft transport
}

// Config configures a Store.
type Config struct {
	NodeID   int32
	Dir      string // metadata dir, created if missing
	BindAddr string // raft transport listen address (the CONTROLLER listener), e.g. 127.0.0.1:9093; port 0 allowed in tests
	// Voters is the metadata quorum. Empty means this node alone, at
	// BindAddr.
	Voters []Voter
	Logger *slog.Logger
	// ValidateTopicConfig checks topic config overrides (nil = accept all);
	// its error text names the key.
	ValidateTopicConfig func(map[string]string) error
	SnapshotInterval    time.Duration // how often raft checks whether to snapshot; default 2m
	SnapshotThreshold   uint64        // log entries since the last snapshot that trigger one; default 8192

	// Placement defaults used when a TopicSpec says -1. Default 1 each.
	DefaultNumPartitions     int32
	DefaultReplicationFactor int16

	// tuneRaft, set by tests, adjusts the raft config (shorter timeouts).
	tuneRaft func(*raft.Config)
}

const (
	defaultSnapshotInterval  = 2 * time.Minute
	defaultSnapshotThreshold = 8192
	snapshotsRetained        = 2
	transportMaxPool         = 3
	transportTimeout         = 10 * time.Second
)

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if len(c.Voters) == 0 {
		c.Voters = []Voter{{ID: c.NodeID, Addr: c.BindAddr}}
	}
	if c.SnapshotInterval == 0 {
		c.SnapshotInterval = defaultSnapshotInterval
	}
	if c.SnapshotThreshold == 0 {
		c.SnapshotThreshold = defaultSnapshotThreshold
	}
	if c.DefaultNumPartitions == 0 {
		c.DefaultNumPartitions = 1
	}
	if c.DefaultReplicationFactor == 0 {
		c.DefaultReplicationFactor = 1
	}
	return c
}

func (c Config) validate() error {
	if c.NodeID < 0 {
		return fmt.Errorf("metadata: node id %d: must be >= 0", c.NodeID)
	}
	if c.Dir == "" {
		return errors.New("metadata: dir is required")
	}
	if c.BindAddr == "" {
		return errors.New("metadata: bind address is required")
	}
	if c.DefaultNumPartitions < 1 {
		return fmt.Errorf("metadata: num.partitions=%d: must be >= 1", c.DefaultNumPartitions)
	}
	if c.DefaultReplicationFactor < 1 {
		return fmt.Errorf("metadata: default.replication.factor=%d: must be >= 1", c.DefaultReplicationFactor)
	}
	seen := map[int32]bool{}
	for _, v := range c.Voters {
		if seen[v.ID] {
			return fmt.Errorf("metadata: voter %d listed twice", v.ID)
		}
		seen[v.ID] = true
	}
	return nil
}

// Store is the replicated cluster metadata on one node: a raft node whose
// state machine is the Image.
type Store struct {
	cfg   Config
	log   *slog.Logger
	fsm   *fsm
	raft  *raft.Raft
	bolt  *raftboltdb.BoltStore
	close func() error // runs once

	bootstrapped bool // Open bootstrapped a new cluster (for tests)

	// pidMu serializes AllocateProducerIDs on this node, so that its
	// proposals do not race each other for the same block.
	pidMu sync.Mutex
}

// Open opens (or creates) the metadata in cfg.Dir and starts raft. The
// node bootstraps a new cluster only when it is the only voter and the
// directory holds no raft state; otherwise it recovers what is on disk.
// Close stops everything Open started.
func Open(cfg Config) (*Store, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger.With("component", "metadata", "node", cfg.NodeID)
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	rlog := newRaftLogger(log)

	bolt, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(cfg.Dir, "raft.db")})
	if err != nil {
		return nil, fmt.Errorf("metadata: open raft.db: %w", err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.Dir, snapshotsRetained, rlog.Named("snapshot"))
	if err != nil {
		bolt.Close()
		return nil, fmt.Errorf("metadata: open snapshots: %w", err)
	}
	advertise, err := advertiseAddr(cfg)
	if err != nil {
		bolt.Close()
		return nil, err
	}
	trans, err := raft.NewTCPTransportWithLogger(cfg.BindAddr, advertise, transportMaxPool, transportTimeout, rlog.Named("transport"))
	if err != nil {
		bolt.Close()
		return nil, fmt.Errorf("metadata: raft transport on %s: %w", cfg.BindAddr, err)
	}

	rc := raft.DefaultConfig()
	rc.LocalID = serverID(cfg.NodeID)
	rc.Logger = rlog
	rc.SnapshotInterval = cfg.SnapshotInterval
	rc.SnapshotThreshold = cfg.SnapshotThreshold
	if len(cfg.Voters) == 1 && cfg.Voters[0].ID == cfg.NodeID {
		// A sole voter has nobody to hear from: waiting a full heartbeat
		// timeout before electing itself only delays every start.
		rc.HeartbeatTimeout = 200 * time.Millisecond
		rc.ElectionTimeout = 200 * time.Millisecond
		rc.LeaderLeaseTimeout = 100 * time.Millisecond
	}
	if cfg.tuneRaft != nil {
		cfg.tuneRaft(rc)
	}

	hasState, err := raft.HasExistingState(bolt, bolt, snaps)
	if err != nil {
		trans.Close()
		bolt.Close()
		return nil, fmt.Errorf("metadata: %w", err)
	}
	f := newFSM(log)
	r, err := raft.NewRaft(rc, f, bolt, bolt, snaps, trans)
	if err != nil {
		trans.Close()
		bolt.Close()
		return nil, fmt.Errorf("metadata: start raft: %w", err)
	}
	s := &Store{cfg: cfg, log: log, fsm: f, raft: r, bolt: bolt}
	s.close = sync.OnceValue(func() error {
		err := r.Shutdown().Error() // stops raft's goroutines and closes the transport
		return errors.Join(err, bolt.Close())
	})

	if !hasState && len(cfg.Voters) == 1 && cfg.Voters[0].ID == cfg.NodeID {
		boot := raft.Configuration{Servers: []raft.Server{{
			Suffrage: raft.Voter,
			ID:       rc.LocalID,
			Address:  trans.LocalAddr(),
		}}}
		if err := r.BootstrapCluster(boot).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
			s.Close()
			return nil, fmt.Errorf("metadata: bootstrap: %w", err)
		}
		s.bootstrapped = true
		log.Info("bootstrapped single-voter metadata quorum", "addr", trans.LocalAddr())
	}
	return s, nil
}

// advertiseAddr is this node's address in Voters when it differs from
// BindAddr (e.g. BindAddr 0.0.0.0:9093), or nil to advertise the listener.
func advertiseAddr(cfg Config) (net.Addr, error) {
	for _, v := range cfg.Voters {
		if v.ID != cfg.NodeID || v.Addr == "" || v.Addr == cfg.BindAddr {
			continue
		}
		a, err := net.ResolveTCPAddr("tcp", v.Addr)
		if err != nil {
			return nil, fmt.Errorf("metadata: voter %d address %q: %w", v.ID, v.Addr, err)
		}
		if a.Port == 0 {
			return nil, nil
		}
		return a, nil
	}
	return nil, nil
}

func serverID(id int32) raft.ServerID { return raft.ServerID(strconv.Itoa(int(id))) }

// Close stops raft (its goroutines and the transport) and closes raft.db.
// Operations in flight fail with ErrClosed. Close is idempotent.
func (s *Store) Close() error { return s.close() }

// Image returns the current image; never nil. The image must not be
// modified.
func (s *Store) Image() *Image { return s.fsm.image() }

// Changed returns a channel that is closed when the image is replaced. Take
// a new channel after each wake-up; to not miss an update, call Changed
// before Image.
func (s *Store) Changed() <-chan struct{} { return s.fsm.changed() }

// IsController reports whether this node is the raft leader, i.e. the
// active controller.
func (s *Store) IsController() bool { return s.raft.State() == raft.Leader }

// ControllerID is the node id of the raft leader, or -1 if none is known.
func (s *Store) ControllerID() int32 {
	_, id := s.raft.LeaderWithID()
	if id == "" {
		return -1
	}
	n, err := strconv.ParseInt(string(id), 10, 32)
	if err != nil {
		return -1
	}
	return int32(n)
}

// WaitReady blocks until a leader exists, this node's image holds
// everything committed before the call (a raft barrier on the leader; on a
// follower, applied index caught up with the commit index it knows), and
// the image has a ClusterID (the leader sets a random one if none).
func (s *Store) WaitReady(ctx context.Context) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if s.raft.State() == raft.Shutdown {
			return ErrClosed
		}
		if s.IsController() {
			err := s.wait(ctx, s.raft.Barrier(enqueueTimeout(ctx)))
			if err == nil && s.Image().ClusterID == "" {
				err = s.setClusterID(ctx)
			}
			if err == nil {
				return nil
			}
			if errors.Is(err, ErrClosed) || ctx.Err() != nil {
				return err
			}
			s.log.Debug("metadata not ready yet", "err", err)
		} else if s.ControllerID() >= 0 && s.Image().ClusterID != "" &&
			s.raft.AppliedIndex() >= s.raft.CommitIndex() {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("metadata: wait ready: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

func (s *Store) setClusterID(ctx context.Context) error {
	id := randomUUID(nil)
	_, err := s.propose(ctx, recSetClusterID, &setClusterIDRecord{ClusterID: encodeUUID(id)})
	if errors.Is(err, ErrClusterIDSet) && s.Image().ClusterID != "" {
		return nil // set by a concurrent call
	}
	return err
}

// enqueueTimeout is how long raft.Apply may wait to enqueue: until ctx's
// deadline, or forever (0).
func enqueueTimeout(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		if t := time.Until(d); t > 0 {
			return t
		}
		return time.Nanosecond
	}
	return 0
}

// wait waits for a raft future or ctx. When ctx wins, the goroutine waiting
// on the future lives on until raft resolves it, which raft always does
// (at the latest when it shuts down).
func (s *Store) wait(ctx context.Context, f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return raftError(err)
	case <-ctx.Done():
		return fmt.Errorf("metadata: %w", ctx.Err())
	}
}

// raftError maps raft's errors to the package's.
func raftError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipLost),
		errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return fmt.Errorf("%w: %v", ErrNotController, err)
	case errors.Is(err, raft.ErrRaftShutdown):
		return ErrClosed
	default:
		return fmt.Errorf("metadata: raft: %w", err)
	}
}

// start encodes a record and hands it to raft. Only the leader may.
func (s *Store) start(ctx context.Context, t recordType, payload any) (raft.ApplyFuture, error) {
	if !s.IsController() {
		return nil, ErrNotController
	}
	data, err := encodeRecord(t, payload)
	if err != nil {
		return nil, err
	}
	return s.raft.Apply(data, enqueueTimeout(ctx)), nil
}

// finish waits until the record is committed and applied here, and returns
// the FSM's result: a value, or the error that rejected the record.
func (s *Store) finish(ctx context.Context, f raft.ApplyFuture) (any, error) {
	if err := s.wait(ctx, f); err != nil {
		return nil, err
	}
	res := f.Response()
	if err, ok := res.(error); ok {
		return nil, err
	}
	return res, nil
}

func (s *Store) propose(ctx context.Context, t recordType, payload any) (any, error) {
	f, err := s.start(ctx, t, payload)
	if err != nil {
		return nil, err
	}
	return s.finish(ctx, f)
}
