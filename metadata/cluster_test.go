package metadata

import (
	"context"
	"errors"
	"fmt"
	"github.com/kbroker/kbroker/internal/testutil"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// clusterRaft: timeouts short enough for fast elections, long enough not to
// flap under the race detector on a loaded two-core machine (a 150 ms lease
// made a leader step down mid-commit while TLS handshakes queued for CPU).
func clusterRaft(c *raft.Config) {
	c.HeartbeatTimeout = 400 * time.Millisecond
	c.ElectionTimeout = 400 * time.Millisecond
	c.LeaderLeaseTimeout = 300 * time.Millisecond
	c.CommitTimeout = 5 * time.Millisecond
}

// freeAddrs returns n addresses on 127.0.0.1 with ports the OS picked,
// reserved together (so no two are the same) and released, so that the
// voters can know each other's before they start. The window between the
// release and a store binding is the one testutil.Ports documents.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	ports := testutil.MustReservePorts(t, n)
	addrs := make([]string, n)
	for i := range addrs {
		addrs[i] = ports.Addr(i)
	}
	ports.MustRelease(t)
	return addrs
}

// testCluster is n voters (node ids 1..n) plus any broker-only nodes added.
type testCluster struct {
	t      *testing.T
	voters []Voter
	cfgs   map[int32]Config
	stores map[int32]*Store // open stores
	tweak  func(*Config)
}

func newTestCluster(t *testing.T, n int, tweak func(*Config)) *testCluster {
	c := &testCluster{t: t, cfgs: map[int32]Config{}, stores: map[int32]*Store{}, tweak: tweak}
	for i, addr := range freeAddrs(t, n) {
		c.voters = append(c.voters, Voter{ID: int32(i + 1), Addr: addr})
	}
	t.Cleanup(func() {
		for _, s := range c.stores {
			s.Close()
		}
	})
	for _, v := range c.voters {
		c.open(v.ID, v.Addr)
	}
	c.ready()
	return c
}

func (c *testCluster) open(id int32, addr string) *Store {
	c.t.Helper()
	cfg, ok := c.cfgs[id]
	if !ok {
		cfg = testConfig(c.t.TempDir())
		cfg.NodeID = id
		cfg.BindAddr = addr
		cfg.Voters = c.voters
		cfg.tuneRaft = clusterRaft
		if c.tweak != nil {
			c.tweak(&cfg)
		}
		c.cfgs[id] = cfg
	}
	s, err := Open(cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	c.stores[id] = s
	return s
}

func (c *testCluster) close(id int32) {
	c.t.Helper()
	if err := c.stores[id].Close(); err != nil {
		c.t.Fatal(err)
	}
	delete(c.stores, id)
}

// ready waits until every open store is ready.
func (c *testCluster) ready() {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for id, s := range c.stores {
		if err := s.WaitReady(ctx); err != nil {
			c.t.Fatalf("node %d: %v", id, err)
		}
	}
}

// leader waits for a leader among the open stores.
func (c *testCluster) leader() *Store {
	c.t.Helper()
	var l *Store
	testutil.Eventually(c.t, 10*time.Second, func() error {
		for _, s := range c.stores {
			if s.IsController() {
				l = s
				return nil
			}
		}
		return errors.New("no leader")
	}, "leader")
	return l
}

// follower returns an open voter that is not the leader.
func (c *testCluster) follower() *Store {
	c.t.Helper()
	l := c.leader()
	for _, v := range c.voters {
		if s, ok := c.stores[v.ID]; ok && s != l {
			return s
		}
	}
	c.t.Fatal("no follower")
	return nil
}

// converged waits until every open store has the same image.
func (c *testCluster) converged() *Image {
	c.t.Helper()
	var img *Image
	testutil.Eventually(c.t, 10*time.Second, func() error {
		img = c.leader().Image()
		for id, s := range c.stores {
			if got := s.Image(); !sameImage(got, img) {
				return fmt.Errorf("node %d at offset %d, leader at %d", id, got.Offset, img.Offset)
			}
		}
		return nil
	}, "images converge")
	return img
}

func (c *testCluster) registerBrokers(ctx context.Context, via *Store, ids ...int32) {
	c.t.Helper()
	for _, id := range ids {
		err := via.RegisterBroker(ctx, BrokerRegistration{ID: id, IncarnationID: fmt.Sprint("inc-", id),
			Endpoints: []Endpoint{{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: 9092 + id, SecurityProtocol: "PLAINTEXT"}}})
		if err != nil {
			c.t.Fatalf("register broker %d: %v", id, err)
		}
	}
}

func TestClusterQuorum(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := newTestCluster(t, 3, nil)
	for id, s := range c.stores {
		if !s.bootstrapped {
			t.Fatalf("voter %d did not bootstrap", id)
		}
	}
	img := c.converged()
	if img.ClusterID == "" {
		t.Fatal("no cluster id")
	}

	// Operations on a follower are forwarded; errors keep their identity.
	f := c.follower()
	c.registerBrokers(ctx, f, 1, 2, 3)
	if errs := f.CreateTopics(ctx, []TopicSpec{
		{Name: "orders", NumPartitions: 6, ReplicationFactor: 3},
		{Name: "wide", NumPartitions: 1, ReplicationFactor: 4},
		{Name: "bad name", NumPartitions: 1, ReplicationFactor: 1},
	}, false); errs[0] != nil || !errors.Is(errs[1], ErrInvalidReplicationFactor) || !errors.Is(errs[2], ErrInvalidTopic) {
		t.Fatalf("create via follower: %v", errs)
	}
	if errs := f.CreateTopics(ctx, []TopicSpec{{Name: "orders", NumPartitions: 1, ReplicationFactor: 1}}, false); !errors.Is(errs[0], ErrTopicExists) {
		t.Fatalf("create again via follower: %v", errs[0])
	}
	if err := f.AlterTopicConfigs(ctx, "orders", map[string]string{"bad.key": "1"}, nil); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("bad config via follower: %v", err)
	}
	if errs := f.DeleteTopics(ctx, []string{"nope"}); !errors.Is(errs[0], ErrUnknownTopic) {
		t.Fatalf("delete via follower: %v", errs[0])
	}
	first, n, err := f.AllocateProducerIDs(ctx, 2)
	if err != nil || n != ProducerIDBlockSize {
		t.Fatalf("producer ids via follower: %d %d %v", first, n, err)
	}
	if err := f.CreatePartitions(ctx, "orders", 6, nil, false); !errors.Is(err, ErrInvalidPartitions) {
		t.Fatalf("create partitions, same count: %v", err)
	}
	if err := f.CreatePartitions(ctx, "orders", 8, [][]int32{{1, 2, 3}, {1, 1, 2}}, false); !errors.Is(err, ErrInvalidReplicaAssignment) {
		t.Fatalf("create partitions, bad assignment: %v", err)
	}
	if err := f.CreatePartitions(ctx, "orders", 8, nil, false); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Heartbeat(ctx, 1, 12345); !errors.Is(err, ErrStaleBrokerEpoch) {
		t.Fatalf("stale heartbeat: %v", err)
	}
	img = c.converged()
	if got := len(img.Topics["orders"].Partitions); got != 8 {
		t.Fatalf("orders has %d partitions", got)
	}

	// Close the leader: the survivors elect a new one and keep working.
	old := c.leader()
	oldID := old.cfg.NodeID
	c.close(oldID)
	l := c.leader()
	if l.cfg.NodeID == oldID {
		t.Fatal("closed leader still leads")
	}
	for _, s := range c.stores {
		if errs := s.CreateTopics(ctx, []TopicSpec{{Name: fmt.Sprint("after-", s.cfg.NodeID), NumPartitions: 2, ReplicationFactor: 2}}, false); errs[0] != nil {
			t.Fatalf("create on node %d after leader loss: %v", s.cfg.NodeID, errs[0])
		}
	}

	// A broker-only node joins as a non-voter and follows the log.
	addr := freeAddrs(t, 1)[0]
	b := c.open(4, addr)
	if b.bootstrapped {
		t.Fatal("a broker-only node bootstrapped")
	}
	c.ready()
	if _, ok := b.Image().Topics["orders"]; !ok {
		t.Fatal("non-voter image lacks orders")
	}
	if errs := b.CreateTopics(ctx, []TopicSpec{{Name: "from-broker", NumPartitions: 1, ReplicationFactor: 1}}, false); errs[0] != nil {
		t.Fatalf("create via non-voter: %v", errs[0])
	}
	cf := l.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		t.Fatal(err)
	}
	nonvoter := false
	for _, srv := range cf.Configuration().Servers {
		if srv.ID == "4" && srv.Suffrage == raft.Nonvoter {
			nonvoter = true
		}
	}
	if !nonvoter {
		t.Fatalf("node 4 not a non-voter: %+v", cf.Configuration())
	}

	// The closed voter comes back, catches up, and does not bootstrap.
	back := c.open(oldID, c.voters[oldID-1].Addr)
	c.ready()
	if back.bootstrapped {
		t.Fatal("reopened voter bootstrapped again")
	}
	img = c.converged()
	for _, name := range []string{"orders", "from-broker"} {
		if _, ok := img.Topics[name]; !ok {
			t.Fatalf("image lacks %s", name)
		}
	}
}

// heartbeater sends heartbeats for a set of brokers through a store.
// Heartbeats fail for a while when the quorum loses its leader, which the
// tests cause on purpose; the failures are counted and logged when it
// stops, so a test that fails for want of heartbeats says why.
type heartbeater struct {
	t       testing.TB
	mu      sync.Mutex
	brokers map[int32]bool
	failed  int
	lastErr error
	stop    chan struct{}
	done    chan struct{}
}

func startHeartbeats(c *testCluster, s *Store, ids ...int32) *heartbeater {
	h := &heartbeater{t: c.t, brokers: map[int32]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
	for _, id := range ids {
		h.brokers[id] = true
	}
	go func() {
		defer close(h.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-h.stop:
				return
			case <-tick.C:
			}
			h.mu.Lock()
			ids := make([]int32, 0, len(h.brokers))
			for id := range h.brokers {
				ids = append(ids, id)
			}
			h.mu.Unlock()
			for _, id := range ids {
				if b, ok := s.Image().Brokers[id]; ok {
					ctx, cancel := context.WithTimeout(context.Background(), time.Second)
					_, err := s.Heartbeat(ctx, id, b.Epoch)
					cancel()
					if err != nil {
						h.mu.Lock()
						h.failed++
						h.lastErr = fmt.Errorf("broker %d: %w", id, err)
						h.mu.Unlock()
					}
				}
			}
		}
	}()
	c.t.Cleanup(h.close) // runs before the stores close
	return h
}

func (h *heartbeater) set(id int32, on bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if on {
		h.brokers[id] = true
	} else {
		delete(h.brokers, id)
	}
}

func (h *heartbeater) close() {
	select {
	case <-h.stop:
	default:
		close(h.stop)
	}
	<-h.done
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failed > 0 {
		h.t.Logf("heartbeater: %d heartbeats failed, the last: %v", h.failed, h.lastErr)
		h.failed = 0
	}
}

func TestClusterFencingAndElections(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := newTestCluster(t, 3, func(cfg *Config) {
		cfg.SessionTimeout = time.Second
		cfg.LeaderImbalanceCheckInterval = 100 * time.Millisecond
	})
	f := c.follower()
	c.registerBrokers(ctx, f, 1, 2, 3)
	h := startHeartbeats(c, f, 1, 2, 3)

	assign := func(replicas ...int32) map[int32][]int32 { return map[int32][]int32{0: replicas} }
	if errs := f.CreateTopics(ctx, []TopicSpec{
		{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignments: assign(3, 1, 2)},
		{Name: "solo", NumPartitions: -1, ReplicationFactor: -1, Assignments: assign(3, 1)},
		{Name: "dirty", NumPartitions: -1, ReplicationFactor: -1, Assignments: assign(3, 1),
			Configs: map[string]string{"unclean.leader.election.enable": "true"}},
	}, false); errs[0] != nil || errs[1] != nil || errs[2] != nil {
		t.Fatal(errs)
	}
	part := func(topic string) *Partition {
		p, _ := c.leader().Image().Partition(topic, 0)
		return p
	}
	// Shrink the ISR of solo and dirty to {3}, as their leader would.
	for _, topic := range []string{"solo", "dirty"} {
		p := part(topic)
		if err := f.ChangePartition(ctx, PartitionChange{Topic: topic, Leader: 3, ISR: []int32{3},
			LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch}); err != nil {
			t.Fatal(err)
		}
	}

	// Broker 3 stops heartbeating: its session expires and it is fenced.
	h.set(3, false)
	testutil.Eventually(t, 10*time.Second, func() error {
		if !c.leader().Image().Brokers[3].Fenced {
			return errors.New("not fenced")
		}
		return nil
	}, "broker 3 fenced")
	if p := part("t"); p.Leader != 1 || !slices.Equal(p.ISR, []int32{1, 2}) || p.LeaderEpoch != 1 {
		t.Fatalf("t-0 after fencing 3: %+v", p)
	}
	if p := part("solo"); p.Leader != NoLeader || !slices.Equal(p.ISR, []int32{3}) {
		t.Fatalf("solo-0 elected outside its ISR: %+v", p)
	}
	if p := part("dirty"); p.Leader != 1 || !slices.Equal(p.ISR, []int32{1}) {
		t.Fatalf("dirty-0 not elected uncleanly: %+v", p)
	}
	if !slices.Equal(c.leader().Image().UnfencedBrokerIDs(), []int32{1, 2}) {
		t.Fatal("brokers 1 and 2 should stay unfenced")
	}

	// A heartbeat unfences it; the offline partition comes back.
	epoch3 := c.leader().Image().Brokers[3].Epoch
	if fenced, err := f.Heartbeat(ctx, 3, epoch3); err != nil || fenced {
		t.Fatalf("heartbeat of 3: %v %v", fenced, err)
	}
	h.set(3, true)
	if p := part("solo"); p.Leader != 3 {
		t.Fatalf("solo-0 after unfencing 3: %+v", p)
	}

	// 3 rejoins t's ISR (AlterPartition): preferred leader election moves
	// leadership back to it.
	p := part("t")
	if err := f.ChangePartition(ctx, PartitionChange{Topic: "t", Leader: p.Leader, ISR: []int32{1, 2, 3},
		LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		if p := part("t"); p.Leader != 3 {
			return fmt.Errorf("t-0 %+v", p)
		}
		return nil
	}, "preferred leader")

	// Controlled shutdown of 3 moves its leaderships away and fences it.
	h.set(3, false)
	if err := f.ControlledShutdown(ctx, 3, epoch3-1); !errors.Is(err, ErrStaleBrokerEpoch) {
		t.Fatalf("controlled shutdown with a stale epoch: %v", err)
	}
	if err := f.ControlledShutdown(ctx, 3, epoch3); err != nil {
		t.Fatal(err)
	}
	if p := part("t"); p.Leader != 1 || slices.Contains(p.ISR, 3) {
		t.Fatalf("t-0 after controlled shutdown: %+v", p)
	}
	if !c.leader().Image().Brokers[3].Fenced {
		t.Fatal("3 not fenced after controlled shutdown")
	}
	// It restarts: a new incarnation registers unfenced with a new epoch.
	if err := f.RegisterBroker(ctx, BrokerRegistration{ID: 3, IncarnationID: "inc-3b"}); err != nil {
		t.Fatal(err)
	}
	if b := c.leader().Image().Brokers[3]; b.Fenced || b.Epoch == epoch3 {
		t.Fatalf("re-registered 3: %+v", b)
	}

	// Broker 2 stops heartbeating and the membership layer reports it
	// dead: the controller fences it once it is silent for the grace.
	h.set(2, false)
	if err := f.ReportBrokerDead(ctx, 2); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		if !c.leader().Image().Brokers[2].Fenced {
			return errors.New("not fenced")
		}
		return nil
	}, "2 fenced after ReportBrokerDead")
	c.converged()
}
