package metadata

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/kbroker/kbroker/metadata/features"
	"github.com/kbroker/kbroker/metadata/listener"
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
	// ValidateClusterConfig checks the cluster-wide dynamic broker
	// defaults (nil = accept all); its error text names the key.
	ValidateClusterConfig func(map[string]string) error
	SnapshotInterval      time.Duration // how often raft checks whether to snapshot; default 2m
	SnapshotThreshold     uint64        // log entries since the last snapshot that trigger one; default 8192

	// Placement defaults used when a TopicSpec says -1. Default 1 each.
	DefaultNumPartitions     int32
	DefaultReplicationFactor int16

	// MaxPartitions (max.partitions) bounds the partitions of the
	// cluster, MaxBrokerPartitions (max.broker.partitions) the partition
	// replicas of one broker; CreateTopics and CreatePartitions beyond
	// them fail with ErrPartitionLimit. Defaults DefaultMaxPartitions and
	// DefaultMaxBrokerPartitions.
	MaxPartitions       int64
	MaxBrokerPartitions int64

	// AdvertiseAddr is the controller listener address other nodes dial
	// (host:port). Default: this node's entry in Voters, else the address
	// the listener got.
	AdvertiseAddr string

	// SessionTimeout (broker.session.timeout.ms): the active controller
	// fences an unfenced broker that has not sent a heartbeat for this
	// long. Default 9s; negative disables session fencing.
	SessionTimeout time.Duration
	// DeadReportGrace: ReportBrokerDead (gossip) fences a broker only
	// when the active controller has not heard a heartbeat from it for
	// this long, so a wrong report cannot fence a live broker. Set it
	// above broker.heartbeat.interval.ms. Default SessionTimeout/3 (3s),
	// or 3s with session fencing disabled.
	DeadReportGrace time.Duration
	// ProbeSilence: the active controller pings the controller listener
	// of a broker it has not heard a heartbeat from for this long, and
	// fences it at once if it does not answer (paused, cut off). Set it
	// above broker.heartbeat.interval.ms. 0 disables it.
	ProbeSilence time.Duration
	// AutoLeaderRebalance (auto.leader.rebalance.enable): the active
	// controller moves leadership back to preferred replicas every
	// LeaderImbalanceCheckInterval. nil means true.
	AutoLeaderRebalance *bool
	// LeaderImbalanceCheckInterval
	// (leader.imbalance.check.interval.seconds). Default 5m.
	LeaderImbalanceCheckInterval time.Duration
	// UncleanLeaderElection is the broker default of
	// unclean.leader.election.enable (topics may override it). Default
	// false.
	UncleanLeaderElection bool

	// BootstrapScram are SCRAM credentials (kafka-storage's --add-scram)
	// written with the cluster id when this node, as the active
	// controller, creates the cluster; once a cluster id exists they are
	// ignored (WaitReady logs it).
	BootstrapScram []ScramCredential

	// ServerTLS, when set, authenticates the controller listener: every
	// accepted connection does a TLS handshake first, with a client
	// certificate required and verified against ServerTLS.ClientCAs
	// (ClientAuth is forced to RequireAndVerifyClientCert), and
	// AuthorizePeer decides which node the peer is. Raft and the
	// controller RPC then run inside TLS. nil: PLAINTEXT, and Open logs a
	// warning.
	ServerTLS *tls.Config
	// ClientTLS dials the other nodes' controller listeners (the raft
	// transport and forwarded controller operations): it must present
	// this node's certificate (Certificates or GetClientCertificate) and
	// trust theirs (RootCAs). An empty ServerName is set to the dialed
	// host. Required with ServerTLS, and only with it.
	ClientTLS *tls.Config
	// AuthorizePeer maps the verified TLS state of a peer of the
	// controller listener to the node id it is (e.g. from its
	// certificate's principal, as the caller maps broker principals and
	// super.users); ok false, or a negative id, refuses the connection.
	// A controller operation that acts for a broker (RegisterBroker,
	// Heartbeat, ControlledShutdown, AllocateProducerIDs, AddNonvoter,
	// ChangePartition of a partition it leads, ReportBrokerDead by its
	// reporter) is refused with ErrNotAuthorized unless the peer is that
	// node. Required with ServerTLS.
	AuthorizePeer func(tls.ConnectionState) (nodeID int32, ok bool)
	// SASL, when set (SASL_PLAINTEXT, or SASL_SSL together with
	// ServerTLS/ClientTLS), authenticates every connection of the
	// controller listener with a SASL exchange before raft or the RPC
	// sees a byte (sasl.go); ServerTLS then does not require client
	// certificates and AuthorizePeer is not used. Node binding is as
	// with AuthorizePeer, for principals that name one node.
	SASL *ControllerSASL

	// DelegationTokens are the delegation.token.* configs the active
	// controller applies (tokens.go).
	DelegationTokens DelegationTokenConfig

	// tuneRaft, set by tests, adjusts the raft config (shorter timeouts).
	tuneRaft func(*raft.Config)
	// wrapListener, set by tests, wraps the controller listener (to make
	// Accept fail).
	wrapListener func(net.Listener) net.Listener
	// leaderlessRejoin is how long a voter goes without a leader before
	// it asks whether the quorum still counts it (joinLoop). Default 10s.
	leaderlessRejoin time.Duration
	// noLeaderWait is how long a forwarded operation looks for a leader
	// before it fails with ErrNotController. Default 5s.
	noLeaderWait time.Duration
}

const (
	defaultSnapshotInterval  = 2 * time.Minute
	defaultSnapshotThreshold = 8192
	snapshotsRetained        = 2
	defaultSessionTimeout    = 9 * time.Second
	defaultImbalanceInterval = 5 * time.Minute
	defaultNoLeaderWait      = 5 * time.Second
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
	if c.MaxPartitions <= 0 {
		c.MaxPartitions = DefaultMaxPartitions
	}
	if c.MaxBrokerPartitions <= 0 {
		c.MaxBrokerPartitions = DefaultMaxBrokerPartitions
	}
	if c.SessionTimeout == 0 {
		c.SessionTimeout = defaultSessionTimeout
	}
	if c.DeadReportGrace <= 0 {
		c.DeadReportGrace = defaultSessionTimeout / 3
		if c.SessionTimeout > 0 {
			c.DeadReportGrace = c.SessionTimeout / 3
		}
	}
	if c.AutoLeaderRebalance == nil {
		t := true
		c.AutoLeaderRebalance = &t
	}
	if c.LeaderImbalanceCheckInterval <= 0 {
		c.LeaderImbalanceCheckInterval = defaultImbalanceInterval
	}
	if c.leaderlessRejoin == 0 {
		c.leaderlessRejoin = defaultLeaderlessRejoin
	}
	if c.noLeaderWait == 0 {
		c.noLeaderWait = defaultNoLeaderWait
	}
	return c
}

// isVoter reports whether this node is in Voters.
func (c Config) isVoter() bool { return c.hasVoter(c.NodeID) }

// hasVoter reports whether node id is in Voters.
func (c Config) hasVoter(id int32) bool {
	for _, v := range c.Voters {
		if v.ID == id {
			return true
		}
	}
	return false
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
	if (c.ServerTLS == nil) != (c.ClientTLS == nil) {
		return errors.New("metadata: controller listener TLS needs both a server and a client config, or neither")
	}
	if c.ServerTLS != nil && c.AuthorizePeer == nil && c.SASL == nil {
		return errors.New("metadata: controller listener TLS needs AuthorizePeer")
	}
	if s := c.SASL; s != nil && (s.Start == nil || s.Client == nil || s.AuthorizeUser == nil) {
		return errors.New("metadata: controller listener SASL needs Start, Client and AuthorizeUser")
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
// state machine is the Image, the controller listener it shares between
// raft and the controller RPC, and (while it is the raft leader) the
// active controller's background duties.
type Store struct {
	cfg       Config
	log       *slog.Logger
	fsm       *fsm
	raft      *raft.Raft
	bolt      *raftboltdb.BoltStore
	logs      *failStopStore // raft's view of bolt: stops at the first failed write
	ln        net.Listener
	stream    *listener.StreamLayer
	dialer    *listener.Pool         // controller RPC connections to other nodes
	auth      listener.Authenticator // the zero value: PLAINTEXT controller listener
	advertise string                 // this node's raft and RPC address
	close     func() error           // runs once

	// ctx is cancelled by Close; every goroutine the Store owns stops
	// when it is, and wg waits for them.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu struct {
		sync.Mutex
		closed bool
		conns  map[net.Conn]struct{} // accepted connections, closed by Close
	}

	sessions sessions // broker heartbeats, kept by the active controller

	// committed is signalled when a proposal of this node commits;
	// announceLoop then tells the followers (see there).
	committed chan struct{}

	bootstrapped bool // Open bootstrapped a new cluster (for tests)

	// bootstrapScramWritten: this node wrote Config.BootstrapScram with
	// the cluster id; bootstrapScramNoted: WaitReady has logged whether
	// they were ignored.
	bootstrapScramWritten atomic.Bool
	bootstrapScramNoted   atomic.Bool

	// pidMu serializes AllocateProducerIDs on this node, so that its
	// proposals do not race each other for the same block.
	pidMu sync.Mutex
	// placeMu serializes, on the active controller, the proposals that
	// place leaders (CreateTopics, CreatePartitions) with those that
	// change which brokers are alive (fencing and unfencing): each plans
	// from the applied image and waits for its record to be applied
	// before the next plans. Without it a topic planned while a broker
	// was alive could commit after that broker's fence record, and its
	// partitions would keep the fenced broker as leader with nothing left
	// to move them: the fence was already applied. Kafka's controller
	// gets the same order from its single event thread.
	placeMu sync.Mutex
	// planned, when set (by tests, while no CreateTopics runs), is called by
	// createTopics between planning and proposing.
	planned      func()
	featuresMu   sync.Mutex                         // serializes UpdateFeatures here
	registration atomic.Pointer[BrokerRegistration] // this node's, for BrokerHeartbeat

	// quorumMu serializes changes of raft's configuration on this node
	// (AddVoter, RemoveVoter, AddNonvoter): each is checked against the
	// configuration it changes. quorum is what DescribeQuorum remembers.
	quorumMu sync.Mutex
	quorum   quorumState
}

// Open opens (or creates) the metadata in cfg.Dir, listens on
// cfg.BindAddr (the controller listener, shared by raft and the controller
// RPC) and starts raft. A voter whose directory holds no raft state
// bootstraps the cluster with all of cfg.Voters (every voter does the
// same, and raft lets them); a node with state recovers it and never
// bootstraps again. A node that is not a voter starts without a
// configuration and asks the active controller to add it as a non-voter.
// Close stops everything Open started.
func Open(cfg Config) (*Store, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger.With("component", "metadata", "node", cfg.NodeID)
	if err := os.MkdirAll(cfg.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	rlog := newRaftLogger(log)

	adv, err := advertiseAddr(cfg)
	if err != nil {
		return nil, err
	}
	bolt, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(cfg.Dir, "raft.db")})
	if err != nil {
		return nil, fmt.Errorf("metadata: open raft.db: %w", err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.Dir, snapshotsRetained, rlog.Named("snapshot"))
	if err != nil {
		bolt.Close()
		return nil, fmt.Errorf("metadata: open snapshots: %w", err)
	}
	ln, err := net.Listen("tcp", cfg.BindAddr)
	if err != nil {
		bolt.Close()
		return nil, fmt.Errorf("metadata: controller listener on %s: %w", cfg.BindAddr, err)
	}
	if adv == nil {
		adv = ln.Addr()
	}
	if cfg.wrapListener != nil {
		ln = cfg.wrapListener(ln)
	}
	dial := listener.Dialer{TLS: cfg.ClientTLS, SASL: cfg.SASL}
	stream := listener.NewStreamLayer(adv, dial)
	trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  stream,
		MaxPool: transportMaxPool,
		Timeout: transportTimeout,
		Logger:  rlog.Named("transport"),
		// 1 turns off hashicorp/raft's pipelined replication. Its pipeline
		// can deadlock (hashicorp/raft#612): when a follower answers
		// Success=false the response decoder stops, and a send racing with
		// that stop parks for good. The leader then never replicates to
		// that follower again while its heartbeats keep it from electing,
		// and Shutdown waits forever (seen as a hung metadata test). The
		// metadata log is small and batched per round trip, so the
		// synchronous path costs nothing measurable.
		MaxRPCsInFlight: 1,
	})

	rc := raft.DefaultConfig()
	rc.LocalID = serverID(cfg.NodeID)
	rc.Logger = rlog
	rc.SnapshotInterval = cfg.SnapshotInterval
	rc.SnapshotThreshold = cfg.SnapshotThreshold
	// Half of hashicorp/raft's LAN defaults (1s): a follower starts an
	// election 0.5–1s after the last heartbeat (sent every 50ms) instead
	// of 1–2s. While there is no active controller a killed broker stays
	// unfenced and its partitions leaderless, so the election is on the
	// path of every failover that kills the controller.
	rc.HeartbeatTimeout = 500 * time.Millisecond
	rc.ElectionTimeout = 500 * time.Millisecond
	rc.LeaderLeaseTimeout = 250 * time.Millisecond
	if len(cfg.Voters) == 1 && cfg.Voters[0].ID == cfg.NodeID {
		// A sole voter has nobody to hear from: waiting a full heartbeat
		// timeout before electing itself only delays every start.
		rc.HeartbeatTimeout = 200 * time.Millisecond
		rc.ElectionTimeout = 200 * time.Millisecond
		rc.LeaderLeaseTimeout = 100 * time.Millisecond
	}
	// A voter removed from the quorum stays a follower (and rejoins as a
	// non-voter, joinLoop) instead of shutting raft down under a running
	// node; RemoveVoter hands a leader's leadership over before removing
	// it anyway.
	rc.ShutdownOnRemove = false
	if cfg.tuneRaft != nil {
		cfg.tuneRaft(rc)
	}

	fail := func(err error) (*Store, error) {
		trans.Close()
		ln.Close()
		bolt.Close()
		return nil, err
	}
	hasState, err := raft.HasExistingState(bolt, bolt, snaps)
	if err != nil {
		return fail(fmt.Errorf("metadata: %w", err))
	}
	if err := checkSnapshots(snaps, cfg.Dir); err != nil {
		return fail(err)
	}
	f := newFSM(log)
	logs := newFailStopStore(bolt, bolt)
	r, err := raft.NewRaft(rc, f, logs, logs, snaps, trans)
	if err != nil {
		return fail(fmt.Errorf("metadata: start raft: %w", err))
	}
	s := &Store{cfg: cfg, log: log, fsm: f, raft: r, bolt: bolt, logs: logs, ln: ln, stream: stream, advertise: adv.String(),
		dialer: listener.NewPool(dial), committed: make(chan struct{}, 1),
		auth: listener.Authenticator{TLS: listener.ServerTLS(cfg.ServerTLS, cfg.SASL != nil), SASL: cfg.SASL, AuthorizePeer: cfg.AuthorizePeer}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.mu.conns = map[net.Conn]struct{}{}
	s.close = sync.OnceValue(func() error {
		s.cancel()
		ln.Close()
		err := r.Shutdown().Error() // stops raft's goroutines and closes the transport
		s.mu.Lock()
		s.mu.closed = true
		for c := range s.mu.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
		s.dialer.Close()
		return errors.Join(err, bolt.Close())
	})

	if !hasState && cfg.isVoter() {
		var boot raft.Configuration
		for _, v := range cfg.Voters {
			addr := raft.ServerAddress(v.Addr)
			if v.ID == cfg.NodeID {
				addr = raft.ServerAddress(s.advertise)
			}
			boot.Servers = append(boot.Servers, raft.Server{Suffrage: raft.Voter, ID: serverID(v.ID), Address: addr})
		}
		if err := r.BootstrapCluster(boot).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
			s.Close()
			return nil, fmt.Errorf("metadata: bootstrap: %w", err)
		}
		s.bootstrapped = true
		log.Info("bootstrapped metadata quorum", "voters", len(boot.Servers), "addr", s.advertise)
	}

	s.warnPlaintext()
	s.goFunc(s.acceptLoop)
	s.goFunc(s.controllerLoop)
	s.goFunc(s.joinLoop)
	s.goFunc(s.announceLoop)
	return s, nil
}

// goFunc runs f on a goroutine that Close waits for.
func (s *Store) goFunc(f func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
}

// track adds an accepted connection to those Close closes; false if the
// Store is closing.
func (s *Store) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return false
	}
	s.mu.conns[c] = struct{}{}
	return true
}

func (s *Store) untrack(c net.Conn) {
	s.mu.Lock()
	delete(s.mu.conns, c)
	s.mu.Unlock()
}

// advertiseAddr is Config.AdvertiseAddr, or this node's address in Voters
// when it differs from BindAddr (e.g. BindAddr 0.0.0.0:9093), or nil to
// advertise the listener's address.
//
// The address is kept as written, host name and all, never resolved: it
// is what raft sends as the leader's address and what other nodes dial
// to forward controller operations, and a container's address may change
// while its name does not (docker network disconnect and connect, a
// rescheduled pod). An IP resolved at start would then point at nothing,
// or at another node that got the address, for as long as this process
// lives. Each dial resolves the name again.
func advertiseAddr(cfg Config) (net.Addr, error) {
	if cfg.AdvertiseAddr != "" {
		a, err := listener.ParseAddr(cfg.AdvertiseAddr)
		if err != nil {
			return nil, fmt.Errorf("metadata: advertise address %q: %w", cfg.AdvertiseAddr, err)
		}
		return a, nil
	}
	for _, v := range cfg.Voters {
		if v.ID != cfg.NodeID || v.Addr == "" || v.Addr == cfg.BindAddr {
			continue
		}
		a, err := listener.ParseAddr(v.Addr)
		if err != nil {
			return nil, fmt.Errorf("metadata: voter %d address %q: %w", v.ID, v.Addr, err)
		}
		if a == nil {
			return nil, nil // port 0: the listener's port
		}
		return a, nil
	}
	return nil, nil
}

func serverID(id int32) raft.ServerID { return raft.ServerID(strconv.Itoa(int(id))) }

// Close stops the Store's goroutines (accept loop, RPC connections,
// controller loop, join loop), raft (its goroutines and the transport),
// closes the controller listener and raft.db. Operations in flight fail
// with ErrClosed. Close is idempotent.
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

// Resign hands the metadata quorum's leadership to the most caught-up
// other voter when this node holds it, so a stopping controller is
// replaced at once rather than after an election timeout. It reports
// whether it handed it over; a node that is not the leader, or the only
// voter, has nothing to hand over.
func (s *Store) Resign(ctx context.Context) (bool, error) {
	if !s.IsController() {
		return false, nil
	}
	voters := 0
	if f := s.raft.GetConfiguration(); f.Error() == nil {
		for _, srv := range f.Configuration().Servers {
			if srv.Suffrage == raft.Voter {
				voters++
			}
		}
	}
	if voters < 2 {
		return false, nil
	}
	if err := s.wait(ctx, s.raft.LeadershipTransfer()); err != nil {
		return false, fmt.Errorf("metadata: hand over the leadership: %w", err)
	}
	return true, nil
}

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

// WaitReady blocks until a leader is known, the image has a ClusterID (the
// leader sets a random one if none), and this node's image holds
// everything committed before the call: the leader's image offset after a
// raft barrier (the ReadIndex operation, forwarded like the controller
// operations) has been applied here. It works on voters and non-voters.
func (s *Store) WaitReady(ctx context.Context) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if s.ctx.Err() != nil {
			return ErrClosed
		}
		if s.ControllerID() >= 0 {
			res, err := call(ctx, s, opReadIndex, none{})
			if err == nil {
				if err := s.waitApplied(ctx, res.Index); err != nil {
					return err
				}
				if err := CheckSupported(s.Image()); err != nil {
					return err
				}
				s.noteBootstrapScramIgnored()
				return nil
			}
			if errors.Is(err, ErrClosed) || ctx.Err() != nil {
				return err
			}
			s.log.Debug("metadata not ready yet", "err", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("metadata: wait ready: %w", ctx.Err())
		case <-s.ctx.Done():
			return ErrClosed
		case <-tick.C:
		}
	}
}

// CatchUp waits until this node's image holds everything the quorum had
// committed when it was called: a ReadIndex at the active controller, then
// a wait for the local apply. A controller operation returns once its
// record is committed, which a node that forwarded it (a broker-only
// node, a Raft non-voter, most of all) may not have applied yet; it calls
// CatchUp before answering from its own image.
func (s *Store) CatchUp(ctx context.Context) error {
	res, err := call(ctx, s, opReadIndex, none{})
	if err != nil {
		return fmt.Errorf("metadata: catch up: %w", err)
	}
	return s.waitApplied(ctx, res.Index)
}

// waitApplied waits until this node's image is at offset index or later
// and has a cluster id.
func (s *Store) waitApplied(ctx context.Context, index uint64) error {
	for {
		ch := s.Changed()
		if img := s.Image(); img.Offset >= index && img.ClusterID != "" {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("metadata: wait ready: %w", ctx.Err())
		case <-s.ctx.Done():
			return ErrClosed
		}
	}
}

// readIndex runs on the leader: after a barrier, every entry committed
// before the call is applied to the leader's image, whose offset it
// returns. It sets the cluster id first if there is none.
func (s *Store) readIndex(ctx context.Context) (readIndexResult, error) {
	if err := s.wait(ctx, s.raft.Barrier(enqueueTimeout(ctx))); err != nil {
		return readIndexResult{}, err
	}
	if s.Image().ClusterID == "" {
		if err := s.setClusterID(ctx); err != nil {
			return readIndexResult{}, err
		}
	}
	return readIndexResult{Index: s.Image().Offset}, nil
}

var opReadIndex = defineOp("ReadIndex", nil,
	func(s *Store, ctx context.Context, _ none) (readIndexResult, error) { return s.readIndex(ctx) })

type readIndexResult struct {
	Index uint64 `json:"index"`
}

// bootstrapFeatures are a new cluster's levels; tests return nil to make a
// cluster as a build before feature levels did.
var bootstrapFeatures = features.Bootstrap

func (s *Store) setClusterID(ctx context.Context) error {
	id := randomUUID(nil)
	rec := &setClusterIDRecord{ClusterID: encodeUUID(id), Features: bootstrapFeatures()}
	for i := range s.cfg.BootstrapScram {
		c := &s.cfg.BootstrapScram[i]
		// One bad credential must not keep the cluster from getting
		// its id (the record would be rejected whole).
		if err := checkScram(c); err != nil {
			s.log.Error("bootstrap SCRAM credential skipped", "user", c.User, "err", err)
			continue
		}
		rec.Scram = append(rec.Scram, c)
	}
	_, err := s.propose(ctx, recSetClusterID, rec)
	if err == nil && len(rec.Scram) > 0 {
		s.bootstrapScramWritten.Store(true)
		s.log.Info("bootstrap SCRAM credentials written with the new cluster id", "count", len(rec.Scram))
	}
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
	select {
	case s.committed <- struct{}{}:
	default: // an announcement is pending already
	}
	res := f.Response()
	if err, ok := res.(error); ok {
		return nil, err
	}
	return res, nil
}

// announceLoop makes every other node apply this controller's commits at
// once. hashicorp/raft tells followers the commit index only in its next
// AppendEntries (heartbeats do not carry it), which an idle leader sends
// a CommitTimeout (50-100 ms) later: every broker would apply a leader
// election, ISR change or new topic that much after the controller did. A
// barrier appends an entry, so AppendEntries go out now and carry the
// commit index. Commits made while a barrier is in flight share the next
// one; the cost is one small raft entry per burst of changes.
func (s *Store) announceLoop() {
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.committed:
		}
		if !s.IsController() {
			continue
		}
		// An error means the leadership moved or raft stops: the new
		// leader announces its own commits.
		_ = s.wait(s.ctx, s.raft.Barrier(time.Second))
	}
}

func (s *Store) propose(ctx context.Context, t recordType, payload any) (any, error) {
	f, err := s.start(ctx, t, payload)
	if err != nil {
		return nil, err
	}
	return s.finish(ctx, f)
}

// Unapplied reports whether this node's Raft log holds entries it has not
// applied yet: written here but not yet known committed, or being applied.
// A broker that another one already names leader of a partition may be
// such a node for a moment.
func (s *Store) Unapplied() bool { return s.raft.LastIndex() > s.raft.AppliedIndex() }

// RaftStatus is what metrics and health checks show of this node's Raft.
type RaftStatus struct {
	State        string // Leader, Follower, Candidate, Shutdown
	Term         uint64
	CommitIndex  uint64
	AppliedIndex uint64
	LastLogIndex uint64
}

// RaftStatus returns the node's current Raft state.
func (s *Store) RaftStatus() RaftStatus {
	st := s.raft.Stats()
	num := func(k string) uint64 {
		v, _ := strconv.ParseUint(st[k], 10, 64)
		return v
	}
	return RaftStatus{
		State:        s.raft.State().String(),
		Term:         num("term"),
		CommitIndex:  num("commit_index"),
		AppliedIndex: s.raft.AppliedIndex(),
		LastLogIndex: num("last_log_index"),
	}
}
