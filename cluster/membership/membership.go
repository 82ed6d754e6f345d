package membership

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// Event reports a change of one node's liveness.
type Event struct {
	NodeID int32
	// Alive is true when the node joined (or came back), false when
	// memberlist declared it dead after suspicion or it left gracefully.
	Alive bool
}

// eventBuffer is the capacity of the Events channel.
const eventBuffer = 64

// Membership is one node's view of which kbroker nodes are alive.
type Membership struct {
	cfg      Config
	log      *slog.Logger
	bindHost string
	bindPort int
	advHost  string
	advPort  int
	conf     memberlistTiming

	keys [][]byte // from cfg.KeyFile, primary first; nil: no encryption

	events chan Event
	kick   chan struct{} // capacity 1: "pending events exist"
	ran    atomic.Bool

	// addrOf returns the IP this node would advertise if gossip started
	// now ("" if unknown); nil when it cannot change (bound to one IP).
	// Tests replace it before Run.
	addrOf func(context.Context) (string, error)

	// shutMu serializes the leave/shutdown of the memberlist (Run's and the
	// tests' crash hook): memberlist panics on Leave after Shutdown.
	shutMu sync.Mutex

	mu struct {
		sync.Mutex
		list    *memberlist.Memberlist // nil before Run creates it and after Run returns
		ring    *memberlist.Keyring    // the list's keyring, nil without a key file
		crashed bool                   // set by the test hook: skip Leave
		stopped bool                   // Run returned: ignore late delegate calls
		alive   map[int32]struct{}
		addrs   map[int32]string // gossip address of each alive member
		pending map[int32]bool   // coalesced undelivered events, latest wins
		order   []int32          // ids in pending, oldest first
	}
}

// memberlistTiming holds the effective timing values.
type memberlistTiming struct {
	probeInterval, probeTimeout, gossipInterval, joinRetry time.Duration
	suspicionMult                                          int
}

// New validates cfg and constructs a Membership. It starts nothing.
func New(cfg Config) (*Membership, error) {
	bindHost, bindPort, advHost, advPort, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	def := memberlist.DefaultLANConfig()
	t := memberlistTiming{
		probeInterval:  orDefault(cfg.ProbeInterval, def.ProbeInterval),
		probeTimeout:   orDefault(cfg.ProbeTimeout, def.ProbeTimeout),
		gossipInterval: orDefault(cfg.GossipInterval, def.GossipInterval),
		joinRetry:      orDefault(cfg.JoinRetryInterval, DefaultJoinRetryInterval),
		suspicionMult:  orDefault(cfg.SuspicionMult, def.SuspicionMult),
	}
	if t.probeTimeout >= t.probeInterval {
		return nil, fmt.Errorf("%w: ProbeTimeout=%v must be less than ProbeInterval=%v",
			ErrInvalidConfig, t.probeTimeout, t.probeInterval)
	}
	var keys [][]byte
	if cfg.KeyFile != "" {
		if keys, err = LoadKeyFile(cfg.KeyFile); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	m := &Membership{
		cfg:      cfg,
		log:      logger.With("node", cfg.NodeID),
		bindHost: bindHost,
		bindPort: bindPort,
		advHost:  advHost,
		advPort:  advPort,
		conf:     t,
		keys:     keys,
		events:   make(chan Event, eventBuffer),
		kick:     make(chan struct{}, 1),
	}
	m.mu.alive = make(map[int32]struct{})
	m.mu.addrs = make(map[int32]string)
	m.mu.pending = make(map[int32]bool)
	m.addrOf = m.defaultAddrOf()
	return m, nil
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Events returns the channel of liveness changes. It is buffered; pending
// events are coalesced per node (latest state wins) rather than blocking
// memberlist, so a consumer may miss an intermediate state but always gets
// each node's latest one. It is closed when Run returns.
func (m *Membership) Events() <-chan Event { return m.events }

// Alive returns the ids of the nodes currently alive, this node included
// while Run runs, sorted ascending.
func (m *Membership) Alive() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	ids := make([]int32, 0, len(m.mu.alive))
	for id := range m.mu.alive {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Run creates the memberlist, joins the seeds (retrying in the background
// until another node is reached), and delivers events until ctx is done.
// Then it leaves the cluster (waiting at most 5s for the leave broadcast),
// shuts memberlist down, closes Events, and returns once everything it
// started has stopped. It returns an error only if memberlist cannot be
// created (the Events channel is closed then too). Run may be called once.
func (m *Membership) Run(ctx context.Context) error {
	if !m.ran.CompareAndSwap(false, true) {
		return ErrAlreadyRun
	}
	defer close(m.events)
	defer m.stop()

	// Bound to all interfaces, advertise the address the watcher
	// computes (when it finds one), not memberlist's own pick, so the two
	// agree.
	var ip string
	if m.addrOf != nil && m.advHost == "" {
		ip, _ = m.addrOf(ctx)
	}
	conf, err := m.memberlistConfig(ctx, ip, m.bindPort)
	if err != nil {
		return err
	}
	list, err := memberlist.Create(conf)
	if err != nil {
		return fmt.Errorf("membership: create memberlist on %s: %w", m.cfg.BindAddr, err)
	}
	m.mu.Lock()
	m.mu.list = list
	m.mu.ring = conf.Keyring
	m.mu.Unlock()
	m.log.Info("gossip started", "name", conf.Name, "addr", list.LocalNode().Address())

	var wg sync.WaitGroup
	if conf.Keyring != nil {
		wg.Go(func() { m.watchKeyFile(ctx, conf.Keyring, m.keys) })
	}
	m.startJoin(ctx, &wg, list)
	if m.addrOf != nil {
		wg.Go(func() { m.watchAddress(ctx, &wg) })
	}

	m.deliver(ctx)

	m.shutMu.Lock()
	m.mu.Lock()
	crashed := m.mu.crashed
	list = m.mu.list // a rejoin may have replaced it (or failed to: nil)
	m.mu.Unlock()
	if list != nil {
		if !crashed {
			if err := list.Leave(leaveTimeout); err != nil {
				m.log.Warn("gossip leave", "err", err)
			}
		}
		if err := list.Shutdown(); err != nil {
			m.log.Warn("gossip shutdown", "err", err)
		}
	}
	m.shutMu.Unlock()
	wg.Wait()
	m.log.Info("gossip stopped")
	return nil
}

// stop forgets all state; delegate calls that arrive later are ignored.
func (m *Membership) stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mu.stopped = true
	m.mu.list = nil
	clear(m.mu.alive)
	clear(m.mu.pending)
	m.mu.order = nil
}

// memberlistConfig builds the memberlist config binding bindPort. ip, when
// not empty, is the address to advertise (a rejoin after an address
// change); otherwise it is resolved from AdvertiseAddr, or memberlist picks
// one from the bind address.
func (m *Membership) memberlistConfig(ctx context.Context, ip string, bindPort int) (*memberlist.Config, error) {
	conf := memberlist.DefaultLANConfig()
	conf.Name = nodeName(m.cfg.NodeID)
	conf.BindAddr = m.bindHost
	conf.BindPort = bindPort
	if ip == "" && m.advHost != "" {
		var err error
		if ip, err = resolveIP(ctx, m.advHost); err != nil {
			return nil, fmt.Errorf("membership: AdvertiseAddr=%s: %w", m.cfg.AdvertiseAddr, err)
		}
	}
	conf.AdvertisePort = bindPort // memberlist replaces 0 by the bound port
	if ip != "" {
		conf.AdvertiseAddr = ip
		if m.advPort != 0 {
			conf.AdvertisePort = m.advPort
		}
	}
	conf.ProbeInterval = m.conf.probeInterval
	conf.ProbeTimeout = m.conf.probeTimeout
	conf.GossipInterval = m.conf.gossipInterval
	conf.SuspicionMult = m.conf.suspicionMult
	// A node already declared dead may come back under its name at a new
	// address at once (a restarted pod gets a new IP). memberlist's default
	// (0) never allows it; a delay would leave the restarted node rejected
	// until the next push-pull. Node ids are unique by configuration, and
	// fencing a stale incarnation is the metadata layer's job.
	conf.DeadNodeReclaimTime = time.Nanosecond
	d := delegate{m}
	conf.Delegate = d
	conf.Events = d
	conf.Alive = d
	conf.Logger = log.New(slogWriter{m.log.With("component", "memberlist")}, "", 0)
	if m.keys != nil {
		// A rejoin keeps the ring: watchKeyFile updates that one.
		m.mu.Lock()
		ring := m.mu.ring
		m.mu.Unlock()
		if ring == nil {
			var err error
			if ring, err = newKeyring(m.keys); err != nil {
				return nil, fmt.Errorf("membership: %s: %w", m.cfg.KeyFile, err)
			}
		}
		// Both verifications default to true with a keyring; set them
		// anyway: a message that is not encrypted with a key we hold
		// must be dropped, never trusted.
		conf.Keyring = ring
		conf.GossipVerifyIncoming = true
		conf.GossipVerifyOutgoing = true
	}
	return conf, nil
}

// resolveIP returns host as an IP literal, resolving a name (IPv4 first).
func resolveIP(ctx context.Context, host string) (string, error) {
	if net.ParseIP(host) != nil {
		return host, nil
	}
	addrs, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil {
		return "", err
	}
	for _, a := range addrs {
		if a.IP.To4() != nil {
			return a.IP.String(), nil
		}
	}
	if len(addrs) == 0 {
		return "", fmt.Errorf("no address for %q", host)
	}
	return addrs[0].IP.String(), nil
}

// otherSeeds drops the seeds that are literally this node's address.
func otherSeeds(seeds []string, self ...string) []string {
	var out []string
	for _, s := range seeds {
		if s != "" && !slices.Contains(self, s) {
			out = append(out, s)
		}
	}
	return out
}

// joinLoop joins the seeds until another node is a member or ctx is done.
func (m *Membership) joinLoop(ctx context.Context, list *memberlist.Memberlist, seeds []string) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for attempt := 1; ; attempt++ {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		if list.NumMembers() > 1 {
			return // another node joined us
		}
		n, err := list.Join(seeds)
		if list.NumMembers() > 1 {
			m.log.Info("gossip joined", "seeds_reached", n, "members", list.NumMembers())
			return
		}
		level := slog.LevelDebug
		if attempt == 1 || attempt%10 == 0 {
			level = slog.LevelInfo
		}
		m.log.Log(ctx, level, "no other node reached yet; retrying",
			"seeds", seeds, "attempt", attempt, "err", err, "retry_in", m.conf.joinRetry)
		timer.Reset(m.conf.joinRetry)
	}
}

// record is called by the delegate: it updates the alive set and queues
// the event, coalesced per node. It never blocks.
func (m *Membership) record(id int32, addr string, alive bool) {
	m.mu.Lock()
	if m.mu.stopped {
		m.mu.Unlock()
		return
	}
	if alive {
		m.mu.alive[id] = struct{}{}
		m.mu.addrs[id] = addr
	} else {
		delete(m.mu.alive, id)
		delete(m.mu.addrs, id)
	}
	if _, queued := m.mu.pending[id]; !queued {
		m.mu.order = append(m.mu.order, id)
	}
	m.mu.pending[id] = alive
	m.mu.Unlock()
	m.log.Info("node liveness", "peer", id, "alive", alive)
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// setAddr records a live member's new address (memberlist's update
// event: the node rejoined elsewhere without being declared dead first).
func (m *Membership) setAddr(id int32, addr string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.mu.alive[id]; ok && !m.mu.stopped {
		m.mu.addrs[id] = addr
	}
}

// MemberAddr is the gossip address (IP) of alive member id, "" if id is
// not alive.
func (m *Membership) MemberAddr(id int32) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.addrs[id]
}

// nextPending pops the oldest pending event.
func (m *Membership) nextPending() (Event, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.mu.order) == 0 {
		return Event{}, false
	}
	id := m.mu.order[0]
	m.mu.order = m.mu.order[1:]
	alive := m.mu.pending[id]
	delete(m.mu.pending, id)
	return Event{NodeID: id, Alive: alive}, true
}

// deliver sends pending events to the Events channel until ctx is done.
func (m *Membership) deliver(ctx context.Context) {
	for {
		ev, ok := m.nextPending()
		if !ok {
			select {
			case <-ctx.Done():
				return
			case <-m.kick:
				continue
			}
		}
		select {
		case m.events <- ev:
		case <-ctx.Done():
			return
		}
	}
}
