package cluster

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kbroker/kbroker/cluster/fetchsession"
	"github.com/kbroker/kbroker/cluster/groupcoord"
	"github.com/kbroker/kbroker/cluster/kafkaapi"
	"github.com/kbroker/kbroker/cluster/quotas"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/cluster/sharecoord"
	"github.com/kbroker/kbroker/cluster/sharepart"
	"github.com/kbroker/kbroker/cluster/txncoord"
	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/internal/quota"
	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/purgatory"
	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/security/sasl"
	"github.com/kbroker/kbroker/storage"
)

// Node is one kbroker process: broker and/or controller, put together.
//
// Goroutines, all started by Run and all stopped before it returns: the
// request server (an acceptor per listener, a reader and a writer per
// connection), the replica manager (image watcher, one fetcher per leader,
// the ISR checker), the storage manager (flushes, retention, cleaning),
// the group coordinator, memberlist gossip and its watcher, the
// heartbeat loop and the admin HTTP server. Shutdown runs in this order:
// heartbeats stop, the controlled shutdown moves leaderships away, the
// server stops accepting and answers what is in flight (waiting requests
// are expired), the background goroutines stop, logs are flushed and
// closed, and raft (whose goroutines the metadata store owns) stops.
type Node struct {
	cfg    config.Config
	logger *slog.Logger

	store *metadata.Store
	logs  *storage.Manager
	// logFS is the file system of the log dirs; nil is the OS's. Tests
	// inject faults through it.
	logFS    storage.FS
	replicas *replication.Manager
	server   *server.Server
	// handlers are the Kafka API handlers the server dispatches to.
	handlers *kafkaapi.Handlers
	metrics  *server.Metrics

	// Delayed operations, keyed by partition.
	produceWaiters *purgatory.Purgatory[replication.TopicPartition]
	fetchWaiters   *purgatory.Purgatory[replication.TopicPartition]
	fetchSessions  *fetchsession.Cache // KIP-227

	producerIDs producerIDAllocator

	// session is this broker's view of its controller session
	// (session.go): a broker that lost it stops leading.
	session brokerSession

	// groups is the group coordinator (package groupcoord).
	groups *groupcoord.Coordinator
	// txns is the transaction coordinator (package txncoord); txnClients are its
	// marker sender's connections to other brokers.
	txns       *txncoord.Coordinator
	txnClients *txncoord.MarkerClients
	// shares is the share coordinator (package sharecoord), shareParts
	// the share-partitions this broker leads (package sharepart).
	shares     *sharecoord.Coordinator
	shareParts *sharepart.Manager

	// security is the listeners' TLS/SASL, the inter-broker client side
	// and the controller listener's mutual TLS (security.go).
	security *nodeSecurity
	// scram backs the SCRAM mechanisms of SASL listeners (scram_store.go).
	scram sasl.CredentialStore
	// bootstrapScram are the --add-scram credentials as metadata records,
	// written to the metadata log at the quorum's first start
	// (bootstrap_scram.go); bootstrapScramInput is what they came from.
	bootstrapScram      []metadata.ScramCredential
	bootstrapScramInput []BootstrapScram

	mu struct {
		sync.Mutex
		// advertised is this broker's endpoints as registered.
		advertised []metadata.Endpoint
	}
	ready  chan struct{} // closed when the node serves requests
	served chan struct{} // closed when the server has stopped

	// unreachable carries brokers to report dead to the controller
	// (reportUnreachable, liveness.go): a replica fetcher's dial was
	// refused, or a follower's fetch connection was dropped.
	unreachable chan unreachableReport
	// refusing remembers those brokers for Metadata answers (liveness.go).
	refusing refusingBrokers
	// lastRedirect is when this broker last refused a client a partition
	// another broker leads (a monotime instant), for the controlled
	// shutdown's drain.
	lastRedirect atomic.Int64

	// offlineReport asks the heartbeat loop to report offline replicas
	// now (a log dir failed, logdirs.go); halt ends Run when every log
	// dir is offline.
	offlineReport chan struct{}
	halt          context.CancelCauseFunc
}

// drainTimeout bounds how long shutdown waits for requests in progress.
const drainTimeout = 10 * time.Second

// NewNode validates cfg and constructs a node. It starts nothing, but
// loads the listeners' TLS key material and SASL settings, failing on any
// error there.
func NewNode(cfg config.Config, logger *slog.Logger, opts ...NodeOption) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n := &Node{
		cfg:            cfg,
		logger:         logger,
		metrics:        server.NewMetrics(),
		produceWaiters: purgatory.New[replication.TopicPartition]("produce"),
		fetchWaiters:   purgatory.New[replication.TopicPartition]("fetch"),
		fetchSessions:  fetchsession.NewCache(int(cfg.MaxIncrementalFetchSessionCacheSlots)),
		ready:          make(chan struct{}),
		offlineReport:  make(chan struct{}, 1),
		served:         make(chan struct{}),
		unreachable:    make(chan unreachableReport, 8),
	}
	for _, o := range opts {
		o(n)
	}
	if n.scram == nil {
		n.scram = n.scramStore()
	}
	var err error
	if n.security, err = newNodeSecurity(&n.cfg, n.scram, logger); err != nil {
		return nil, fmt.Errorf("security: %w", err)
	}
	n.producerIDs.controller = nodeController{n}
	n.session.timeout = time.Duration(cfg.BrokerSessionTimeoutMs) * time.Millisecond
	n.groups = groupcoord.New(groupsNodeHost{n}, groupsConfigOf(n), logger)
	n.txnClients = &txncoord.MarkerClients{Dialer: n.security.dialer}
	n.txns = txncoord.New(txnsNodeHost{n: n, clients: n.txnClients}, txnsConfigOf(n), logger)
	n.shares = sharecoord.New(sharesNodeHost{n}, sharesConfigOf(n), logger)
	n.shares.SetPersister(statePersister{n})
	n.shareParts = sharepart.New(sharePartsHost{n}, statePersister{n}, n.fetchWaiters, logger)
	n.metrics.Registry.MustRegister(newStateCollector(n))
	n.metrics.Registry.MustRegister(newIntegrityCollector(n))
	scfg := server.ConfigFrom(&cfg)
	scfg.FollowerGone = n.followerGone
	scfg.Listeners = n.security.listeners
	scfg.FinalizedFeatures = func() (map[string]int16, int64) {
		img := n.store.Image()
		return img.Features(), img.FeaturesEpoch()
	}
	n.handlers = kafkaapi.New(kafkaapi.Deps{
		Config: &n.cfg, Logger: logger, Metrics: n.metrics, Liveness: nodeLiveness{n},
		ProduceWaiters: n.produceWaiters, FetchWaiters: n.fetchWaiters,
		FetchSessions: n.fetchSessions, ProducerIDs: &n.producerIDs,
		Groups: n.groups, Txns: n.txns, TxnClients: n.txnClients,
		Shares: n.shares, SharePartitions: n.shareParts,
		FetchPeer: n.fetchPeer,
	})
	n.server = server.New(logger, n.handlers.APIs(), scfg, n.metrics)
	n.server.Quotas = quotas.New(quota.Config{
		Samples: int(cfg.QuotaWindowNum),
		Window:  time.Duration(cfg.QuotaWindowSizeSeconds) * time.Second,
	}, quota.Config{
		Samples: int(cfg.ControllerQuotaWindowNum),
		Window:  time.Duration(cfg.ControllerQuotaWindowSizeSeconds) * time.Second,
	}, n.image)
	n.metrics.Registry.MustRegister(quotas.NewCollector(n.server.Quotas))
	if err := n.installAuthorizer(); err != nil {
		return nil, err
	}
	return n, nil
}

// Ready is closed once the node accepts client requests.
func (n *Node) Ready() <-chan struct{} { return n.ready }

// Addr returns the bound address of a broker listener (useful with port 0).
func (n *Node) Addr(listener string) (string, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, e := range n.mu.advertised {
		if e.Listener == listener {
			return net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port))), true
		}
	}
	return "", false
}

// Run starts the node and serves until ctx is cancelled, then shuts down
// cleanly: it stops accepting, answers or fails the requests in flight,
// flushes and closes every log (writing the clean-shutdown marker) and
// stops raft.
func (n *Node) Run(ctx context.Context) (err error) {
	cfg := &n.cfg
	ctx, n.halt = context.WithCancelCause(ctx)
	defer n.halt(nil)
	defer func() {
		// Every log dir failed, or the metadata log store did: the node
		// stopped itself (logdirs.go).
		if cause := context.Cause(ctx); err == nil && (errors.Is(cause, errAllLogDirsOffline) || errors.Is(cause, metadata.ErrLogStoreFailed)) {
			err = cause
		}
	}()
	fsys := n.logFS
	if fsys == nil {
		fsys = storage.OSFS{}
	}
	n.logs, err = storage.OpenManagerFS(fsys, cfg.LogDirs, n.logger.With("component", "storage"))
	if err != nil {
		return fmt.Errorf("opening log dirs: %w", err)
	}
	n.limitLogFiles()
	n.logs.SetRetentionCheckInterval(time.Duration(cfg.LogRetentionCheckIntervalMs) * time.Millisecond)
	n.logs.SetCleanerBackoff(time.Duration(cfg.LogCleanerBackoffMs) * time.Millisecond)
	n.logs.SetCleaner(cfg.LogCleanerEnable, storage.CleanerLimits{
		DedupeBufferSize:    cfg.LogCleanerDedupeBufferSize,
		IOMaxBytesPerSecond: cfg.LogCleanerIOMaxBytesPerSecond,
	})
	n.logs.SetScrubRate(cfg.LogScrubberBytesPerSecond)
	defer func() {
		if cerr := n.logs.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("closing logs: %w", cerr))
		}
	}()

	// Bind the client listeners before registering, so port 0 resolves
	// to the port clients must be told.
	endpoints, err := n.bindListeners()
	// Serve closes the listeners; this covers the returns before it.
	defer n.server.CloseListeners()
	if err != nil {
		return err
	}

	// TLS key material is reloaded while the node runs.
	var secWG sync.WaitGroup
	secCtx, stopSec := context.WithCancel(context.WithoutCancel(ctx))
	n.security.run(secCtx, &secWG, n.logger)
	defer secWG.Wait()
	defer stopSec()
	if len(n.bootstrapScramInput) > 0 {
		users := make([]string, 0, len(n.bootstrapScramInput))
		for _, b := range n.bootstrapScramInput {
			users = append(users, b.Credential.Mechanism.Name()+":"+b.User)
		}
		n.logger.Info("--add-scram credentials are written to the metadata log only at the quorum's first start; later starts ignore them", "credentials", users)
	}

	n.store, err = metadata.Open(n.metadataConfig())
	if err != nil {
		return fmt.Errorf("opening metadata: %w", err)
	}
	if n.cfg.IsController() && !slices.ContainsFunc(n.cfg.ControllerQuorumVoters, func(v config.Voter) bool { return v.ID == n.cfg.NodeID }) {
		// The voter set lives in the metadata log (KIP-853): this node
		// may have been added since, which the log, not the config, says.
		n.logger.Info("this controller is not in controller.quorum.voters: unless the quorum added it, it follows the metadata log as an observer until `kbroker admin quorum add-voter` adds it")
	}
	defer func() {
		if cerr := n.store.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("closing metadata: %w", cerr))
		}
	}()
	if err := n.store.WaitReady(ctx); err != nil {
		return fmt.Errorf("waiting for the metadata quorum: %w", err)
	}
	// Every image from here on holds what the quorum had committed when
	// this broker started: the replica manager removes the stray logs on
	// disk at the first one it applies (replication stray.go), never on an
	// image the local Raft log replayed before catching up. A
	// controller-only node hosts no replicas and leaves its log dirs as
	// they are.
	caughtUp := n.store.Image().Offset
	current := func(img *metadata.Image) bool { return img.Offset >= caughtUp }
	if !cfg.IsBroker() {
		current = nil
	}
	capacity := n.partitionCapacity()
	reg := metadata.BrokerRegistration{
		ID:            cfg.NodeID,
		IncarnationID: newIncarnationID(),
		Endpoints:     endpoints,
		Rack:          cfg.BrokerRack,

		PartitionCapacity: capacity,
	}
	// A controller-only node is no broker: registered, it would be
	// unfenced and take replicas until its session (kept alive only by a
	// broker's heartbeats) expired, and be listed as a fenced broker after.
	if cfg.IsBroker() {
		if err := n.store.RegisterBroker(ctx, reg); err != nil {
			return fmt.Errorf("registering broker %d: %w", cfg.NodeID, err)
		}
	}
	n.mu.Lock()
	n.mu.advertised = endpoints
	n.mu.Unlock()

	n.replicas = replication.NewManager(n.replicationConfig(capacity, current))
	n.handlers.Attach(n.store, n.logs, n.replicas)
	if err := n.replicas.Apply(n.store.Image()); err != nil {
		// Replicas whose logs cannot open (a failed disk, descriptors
		// exhausted by something else) are offline, not fatal:
		// they answer KAFKA_STORAGE_ERROR, are reported to the controller
		// with the heartbeats so leadership moves, and are reopened on
		// every image change. Anything else stops the start.
		offline, ok := onlyStorageErrors(err)
		if !ok {
			return fmt.Errorf("opening partitions: %w", err)
		}
		n.logger.Error("starting with offline replicas", "replicas", offline)
	}

	var wg sync.WaitGroup
	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBG()
	// wg.Go keeps the count right as goroutines are added here.
	wg.Go(func() { n.replicas.Run(bg, n.store) })
	wg.Go(func() { n.reportUnreachable(bg) })
	wg.Go(func() { n.logs.Run(bg) })
	wg.Go(func() { n.watchMetadataLog(bg) })
	wg.Go(func() { n.watchCleanerConfigs(bg) })
	wg.Go(func() { n.groups.Run(bg) })
	wg.Go(func() { n.handlers.RunAutoCreate(bg) })
	// The share goroutines stop before the inter-broker clients they
	// persist through close.
	var shareWG sync.WaitGroup
	shareWG.Go(func() { n.shares.Run(bg) })
	shareWG.Go(func() { n.shareParts.Run(bg) })
	wg.Go(func() { n.txns.Run(bg); shareWG.Wait(); n.txnClients.Close() })
	if err := n.startTiered(bg, &wg); err != nil { // tiered.go
		stopBG()
		wg.Wait()
		return fmt.Errorf("tiered storage: %w", err)
	}
	if cfg.AdminListener != "" {
		ln, err := net.Listen("tcp", cfg.AdminListener)
		if err != nil {
			stopBG()
			wg.Wait()
			return fmt.Errorf("admin.listener %s: %w", cfg.AdminListener, err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); n.serveAdmin(bg, ln) }()
	}

	if err := n.startMembership(bg, &wg); err != nil {
		stopBG()
		wg.Wait()
		return err
	}
	if cfg.IsBroker() {
		wg.Add(1)
		// Heartbeats stop as soon as shutdown begins, so none unfences
		// the broker after its controlled shutdown.
		go func() { defer wg.Done(); n.heartbeatLoop(ctx) }()
		wg.Add(1)
		go func() { defer wg.Done(); n.watchSession(ctx) }()
	}

	n.logger.Info("kbroker started", "node.id", cfg.NodeID, "listeners", endpoints, "cluster.id", n.store.Image().ClusterID)
	close(n.ready)

	// On ctx's end: first move this broker's leaderships away while it
	// still serves (controlled shutdown), then stop serving and expire
	// every waiting operation so connections write their last responses.
	serveCtx, stopServing := context.WithCancel(context.WithoutCancel(ctx))
	shutdownDone := make(chan struct{})
	stopWatch := context.AfterFunc(ctx, func() {
		defer close(shutdownDone)
		moved := n.controlledShutdown()
		n.resignController()
		if moved {
			n.drainClients()
		}
		stopServing()
		n.produceWaiters.Close()
		n.fetchWaiters.Close()
		n.groups.Close()
		n.txns.Close()
		n.shareParts.Close()
		n.shares.Close()
	})
	defer stopWatch()
	// Every waiting request is answered above; this is the backstop for
	// one that somehow is not.
	stopAbandon := context.AfterFunc(serveCtx, func() {
		t := time.NewTimer(drainTimeout)
		defer t.Stop()
		select {
		case <-t.C:
			n.logger.Warn("requests still in progress after the drain timeout; closing their connections", "timeout", drainTimeout)
			n.server.Abandon()
		case <-n.served:
		}
	})
	defer stopAbandon()
	n.server.Serve(serveCtx)
	close(n.served)
	// Serve returns only once the shutdown above has begun; let it finish
	// before the stores it touches are closed.
	<-shutdownDone

	stopBG()
	wg.Wait()
	n.logger.Info("kbroker stopped", "node.id", cfg.NodeID)
	return nil
}

// replicationConfig is the replica manager's share of the node's config,
// with the hooks that wake the purgatories and the coordinators when a
// partition changes.
func (n *Node) replicationConfig(capacity int64, current func(*metadata.Image) bool) replication.ManagerConfig {
	cfg := &n.cfg
	return replication.ManagerConfig{
		NodeID:               cfg.NodeID,
		Logs:                 n.logs,
		Logger:               n.logger.With("component", "replication"),
		TopicConfig:          n.resolveTopic,
		InterBrokerListener:  cfg.InterBrokerListenerName,
		ReplicaFetchMaxBytes: cfg.ReplicaFetchMaxBytes,
		PartitionCapacity:    capacity,
		ReplicaFetchWaitMax:  time.Duration(cfg.ReplicaFetchWaitMaxMs) * time.Millisecond,
		ReplicaLagTimeMax:    time.Duration(cfg.ReplicaLagTimeMaxMs) * time.Millisecond,
		Dialer:               n.security.dialer,
		ISR:                  newISRChanger(n.store, cfg.NodeID),
		Current:              current,
		MetadataLogDir:       n.metadataConfig().Dir,
		ThrottledRates: func(img *metadata.Image) (int64, int64) {
			return cfg.ReplicationThrottledRates(img.DynamicBrokerConfigs(cfg.NodeID))
		},
		ReplicationQuota: quota.Config{
			Samples: int(cfg.ReplicationQuotaWindowNum),
			Window:  time.Duration(cfg.ReplicationQuotaWindowSizeSeconds) * time.Second,
		},
		// Wake the requests waiting on a partition when it changes.
		OnHighWatermark: func(tp replication.TopicPartition) {
			n.produceWaiters.Check(tp)
			n.fetchWaiters.Check(tp)
			n.groups.OnHighWatermark(tp)
			n.txns.OnHighWatermark(tp)
			n.shares.OnHighWatermark(tp)
		},
		OnLogAppend: func(tp replication.TopicPartition) { n.fetchWaiters.Check(tp) },
		OnRoleChange: func(tp replication.TopicPartition) {
			n.produceWaiters.Check(tp)
			n.fetchWaiters.Check(tp)
			n.groups.OnRoleChange(tp)
			n.txns.OnRoleChange(tp)
			n.shares.OnRoleChange(tp, groupcoord.OffsetsTopic)
		},
		OnLeaderUnreachable: n.leaderUnreachable,
		OnLeaderReachable:   n.leaderReachable,
		OnLogDirFailure:     n.onLogDirFailure,
	}
}

// bindListeners binds every non-controller listener and returns the
// endpoints to advertise for them.
func (n *Node) bindListeners() ([]metadata.Endpoint, error) {
	cfg := &n.cfg
	var out []metadata.Endpoint
	for _, l := range cfg.Listeners {
		if isController(cfg, l.Name) {
			continue
		}
		addr, err := n.server.Listen(l.Name, l.Addr())
		if err != nil {
			return nil, err
		}
		port := addr.(*net.TCPAddr).Port
		host := l.Host
		adv, ok := findListener(cfg.AdvertisedListeners, l.Name)
		if ok {
			host = adv.Host
			if adv.Port != 0 {
				port = adv.Port
			}
		}
		if host == "" || host == "0.0.0.0" || host == "::" {
			host = "localhost"
		}
		out = append(out, metadata.Endpoint{
			Listener:         l.Name,
			Host:             host,
			Port:             int32(port),
			SecurityProtocol: securityProtocol(cfg, l.Name),
		})
	}
	return out, nil
}

func (n *Node) metadataConfig() metadata.Config {
	cfg := &n.cfg
	dir := cfg.MetadataLogDir
	if dir == "" {
		dir = filepath.Join(cfg.LogDirs[0], "__cluster_metadata")
	}
	var bind string
	if l, ok := cfg.ControllerListener(); ok {
		bind = l.Addr()
	}
	voters := make([]metadata.Voter, 0, len(cfg.ControllerQuorumVoters))
	for _, v := range cfg.ControllerQuorumVoters {
		voters = append(voters, metadata.Voter{ID: v.ID, Addr: v.Addr()})
	}
	mc := metadata.Config{
		NodeID:                   cfg.NodeID,
		Dir:                      dir,
		BindAddr:                 bind,
		Voters:                   voters,
		Logger:                   n.logger.With("component", "metadata"),
		ValidateTopicConfig:      cfg.ValidateTopicConfigs,
		ValidateClusterConfig:    cfg.ValidateClusterConfigs,
		DefaultNumPartitions:     cfg.NumPartitions,
		DefaultReplicationFactor: cfg.DefaultReplicationFactor,
		AdvertiseAddr:            advertisedVoterAddr(cfg),
		SessionTimeout:           time.Duration(cfg.BrokerSessionTimeoutMs) * time.Millisecond,
		// Two heartbeat intervals: a broker that missed one heartbeat
		// and then went silent is dead, whatever gossip thinks.
		DeadReportGrace: 2 * time.Duration(cfg.BrokerHeartbeatIntervalMs) * time.Millisecond,
		// An eighth of an interval late: a live broker answers the
		// controller's ping, a paused or cut-off one is fenced.
		ProbeSilence:                 9 * time.Duration(cfg.BrokerHeartbeatIntervalMs) * time.Millisecond / 8,
		AutoLeaderRebalance:          &cfg.AutoLeaderRebalanceEnable,
		LeaderImbalanceCheckInterval: time.Duration(cfg.LeaderImbalanceCheckIntervalSeconds) * time.Second,
		MaxPartitions:                int64(cfg.MaxPartitions),
		MaxBrokerPartitions:          int64(cfg.MaxBrokerPartitions),
		UncleanLeaderElection:        cfg.UncleanLeaderElectionEnable,
		BootstrapScram:               n.bootstrapScram,
		DelegationTokens: metadata.DelegationTokenConfig{
			Enabled:             cfg.DelegationTokenSecretKey != "",
			MaxLifetime:         time.Duration(cfg.DelegationTokenMaxLifetimeMs) * time.Millisecond,
			ExpiryTime:          time.Duration(cfg.DelegationTokenExpiryTimeMs) * time.Millisecond,
			ExpiryCheckInterval: time.Duration(cfg.DelegationTokenExpiryCheckIntervalMs) * time.Millisecond,
		},
	}
	n.security.applyMetadata(&mc)
	return mc
}

// advertisedVoterAddr is this node's own entry in controller.quorum.voters,
// the address the other nodes reach its controller listener at (it may
// bind 0.0.0.0). Broker-only nodes are not in the list; their listener's
// address is used, with a wildcard host replaced by the host name.
func advertisedVoterAddr(cfg *config.Config) string {
	for _, v := range cfg.ControllerQuorumVoters {
		if v.ID == cfg.NodeID {
			return v.Addr()
		}
	}
	l, ok := cfg.ControllerListener()
	if !ok {
		return ""
	}
	if l.Host == "" || l.Host == "0.0.0.0" || l.Host == "::" {
		if h, err := os.Hostname(); err == nil {
			l.Host = h
		}
	}
	return l.Addr()
}

// resolveTopic is a topic's effective config: this node's static config,
// then the cluster-wide dynamic defaults from the metadata image, then
// this broker's own per-broker dynamic values, then the topic's own
// overrides.
func (n *Node) resolveTopic(overrides map[string]string) config.TopicConfig {
	img := n.store.Image()
	return n.cfg.ResolveTopicFor(img.ClusterConfigs, img.BrokerConfigs[n.cfg.NodeID], overrides)
}

func isController(cfg *config.Config, name string) bool {
	for _, c := range cfg.ControllerListenerNames {
		if c == name {
			return true
		}
	}
	return false
}

func findListener(ls []config.Listener, name string) (config.Listener, bool) {
	for _, l := range ls {
		if l.Name == name {
			return l, true
		}
	}
	return config.Listener{}, false
}

func securityProtocol(cfg *config.Config, name string) string {
	if p, ok := cfg.ListenerSecurityProtocolMap[name]; ok {
		return p
	}
	return "PLAINTEXT"
}

func newIncarnationID() string {
	var b [16]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// producerIDBlocks is what the producer id allocator needs of the
// controller: a new block of ids for this broker.
type producerIDBlocks interface {
	AllocateProducerIDs(ctx context.Context) (first, count int64, err error)
}

// nodeController is the producerIDBlocks of a Node: its metadata store
// (opened by Run, before any request is served), for its broker id.
type nodeController struct{ n *Node }

func (c nodeController) AllocateProducerIDs(ctx context.Context) (int64, int64, error) {
	return c.n.store.AllocateProducerIDs(ctx, c.n.cfg.NodeID)
}

// producerIDAllocator hands out producer ids from blocks the controller
// allocates through Raft, so ids are unique across brokers and restarts.
type producerIDAllocator struct {
	controller producerIDBlocks
	mu         sync.Mutex
	next       int64
	end        int64 // exclusive
}

func (a *producerIDAllocator) Allocate(ctx context.Context) (int64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.next >= a.end {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		first, count, err := a.controller.AllocateProducerIDs(ctx)
		if err != nil {
			return -1, err
		}
		a.next, a.end = first, first+count
	}
	id := a.next
	a.next++
	return id, nil
}

// onlyStorageErrors reports whether every error joined in err is a
// storage error (an offline replica), and how many there are.
func onlyStorageErrors(err error) (int, bool) {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		if !errors.Is(e, storage.ErrStorage) {
			return 0, false
		}
	}
	return len(errs), true
}
