package itest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/clustercheck"
	"github.com/kbroker/kbroker/internal/testutil"
)

// testCluster is n kbroker subprocesses, each broker and controller, on
// 127.0.0.1 ports from the OS, gossiping with memberlist.
type testCluster struct {
	t       testing.TB
	brokers []*broker // index i is node id i+1
	voters  string
	gossip  []string
	sets    []string
}

// clusterTiming makes failure detection quick enough for tests.
var clusterTiming = []string{
	"broker.heartbeat.interval.ms=500",
	"broker.session.timeout.ms=3000",
	"leader.imbalance.check.interval.seconds=2",
}

// startCluster starts n nodes on reserved ports and waits until each
// answers Metadata. A node that lost one of its ports between the
// reservation's release and its bind (see testutil.Ports) restarts the
// whole cluster on new ports and fresh directories.
func startCluster(t testing.TB, n int, sets ...string) *testCluster {
	t.Helper()
	return startClusterOn(t, "", n, sets...)
}

// startClusterOn is startCluster with every node running bin ("" is
// this build).
func startClusterOn(t testing.TB, bin string, n int, sets ...string) *testCluster {
	t.Helper()
	for attempt := 1; ; attempt++ {
		c, err := tryStartCluster(t, bin, n, sets)
		if err == nil {
			return c
		}
		inUse := false
		for _, b := range c.brokers {
			inUse = inUse || testutil.AddrInUse(nil, b.logTail(logTailLines))
		}
		if attempt == startAttempts || !inUse {
			t.Fatal(err)
		}
		t.Logf("cluster start attempt %d lost a port, retrying on new ones: %v", attempt, err)
		for _, b := range c.brokers {
			b.kill9()
		}
	}
}

func tryStartCluster(t testing.TB, bin string, n int, sets []string) (*testCluster, error) {
	ports := testutil.MustReservePorts(t, 3*n)
	c := &testCluster{t: t, sets: append(slices.Clone(clusterTiming), sets...)}
	var voters []string
	for i := range n {
		voters = append(voters, fmt.Sprintf("%d@%s", i+1, ports.Addr(3*i+1)))
		c.gossip = append(c.gossip, ports.Addr(3*i+2))
	}
	c.voters = strings.Join(voters, ",")
	for i := range n {
		c.brokers = append(c.brokers, c.newNode(i+1, ports.Addr(3*i), ports.Addr(3*i+1), ports.Addr(3*i+2)))
	}
	ports.MustRelease(c.t)
	for _, b := range c.brokers {
		b.bin = bin
		b.launch()
	}
	// The quorum forms only once a majority runs, so wait after all
	// have been launched.
	for _, b := range c.brokers {
		if err := b.ready(); err != nil {
			return c, fmt.Errorf("%w; log tail:\n%s", err, b.logTail(logTailLines))
		}
	}
	return c, nil
}

func (c *testCluster) newNode(id int, addr, ctrl, gossip string, extra ...string) *broker {
	sets := append([]string{
		"gossip.listener=" + gossip,
		"gossip.seeds=" + strings.Join(c.gossip, ","),
	}, c.sets...)
	sets = append(sets, extra...)
	return newBroker(c.t, id, c.t.TempDir(), addr, ctrl, c.voters, sets...)
}

// addBrokerOnly starts one more node with process.roles=broker. Its ports
// are not in any other node's configuration, but a retry would need a new
// node id, so a lost port fails the test.
func (c *testCluster) addBrokerOnly() *broker {
	c.t.Helper()
	ports := testutil.MustReservePorts(c.t, 3)
	b := c.newNode(len(c.brokers)+1, ports.Addr(0), ports.Addr(1), ports.Addr(2), "process.roles=broker")
	c.brokers = append(c.brokers, b)
	ports.MustRelease(c.t)
	b.start()
	return b
}

func (c *testCluster) node(id int32) *broker { return c.brokers[id-1] }

// alive returns the running nodes that serve clients: controller-only
// nodes have no client listener and are left out.
func (c *testCluster) alive() []*broker {
	var out []*broker
	for _, b := range c.brokers {
		if b.running() && !b.controllerOnly {
			out = append(out, b)
		}
	}
	return out
}

// metadataFrom asks the broker at addr itself for every topic's metadata.
func metadataFrom(t testing.TB, addr string) (*kmsg.MetadataResponse, error) {
	return clustercheck.MetadataFrom(context.Background(), addr)
}

// describe renders the parts of a Metadata response every broker must
// agree on.
func describe(m *kmsg.MetadataResponse) string { return clustercheck.Describe(m, "") }

// waitConverged polls every running broker until their metadata agree
// and cond holds for it.
func (c *testCluster) waitConverged(timeout time.Duration, what string, cond func(*kmsg.MetadataResponse) bool) *kmsg.MetadataResponse {
	c.t.Helper()
	var got *kmsg.MetadataResponse
	testutil.Eventually(c.t, timeout, func() error {
		var addrs []string
		for _, b := range c.alive() {
			addrs = append(addrs, b.addr)
		}
		m, err := clustercheck.Converged(context.Background(), addrs, "")
		if err != nil {
			return err
		}
		if !cond(m) {
			return fmt.Errorf("agreed, but not there yet:\n%s", describe(m))
		}
		got = m
		return nil
	}, "cluster converging on %s", what)
	return got
}

func createTopicOn(t testing.TB, addr, topic string, partitions int32, rf int16) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, rf, nil, topic)
	if err != nil || res.Err != nil {
		t.Fatalf("create %s via %s: %v %v", topic, addr, err, res.Err)
	}
}

func allLed(topic string, alive map[int32]bool) func(*kmsg.MetadataResponse) bool {
	return func(m *kmsg.MetadataResponse) bool {
		for _, t := range m.Topics {
			if *t.Topic != topic {
				continue
			}
			for _, p := range t.Partitions {
				if p.Leader < 0 || !alive[p.Leader] || p.ErrorCode != 0 {
					return false
				}
			}
			return len(t.Partitions) > 0
		}
		return false
	}
}

func aliveIDs(c *testCluster) map[int32]bool {
	out := map[int32]bool{}
	for i, b := range c.brokers {
		if b.running() {
			out[int32(i+1)] = true
		}
	}
	return out
}

// Three nodes form a quorum by themselves; a topic created through any
// node is visible, identically, on all.
func TestClusterFormsAndAgrees(t *testing.T) {
	c := startCluster(t, 3)
	createTopicOn(t, c.node(2).addr, "everywhere", 6, 3)
	m := c.waitConverged(30*time.Second, "topic everywhere led on 3 brokers", func(m *kmsg.MetadataResponse) bool {
		return len(m.Brokers) == 3 && allLed("everywhere", aliveIDs(c))(m)
	})
	leaders := map[int32]int{}
	for _, tp := range m.Topics {
		for _, p := range tp.Partitions {
			leaders[p.Leader]++
			if len(p.Replicas) != 3 || len(p.ISR) != 3 {
				t.Fatalf("partition %d: replicas %v isr %v", p.Partition, p.Replicas, p.ISR)
			}
		}
	}
	if len(leaders) != 3 {
		t.Fatalf("leadership not spread over the brokers: %v", leaders)
	}
	// Creating it again through another node is refused the same way.
	cl, _ := kgo.NewClient(kgo.SeedBrokers(c.node(3).addr))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "everywhere")
	if res.Err == nil || !strings.Contains(res.Err.Error(), "TOPIC_ALREADY_EXISTS") {
		t.Fatalf("duplicate create via node 3: %v %v", err, res.Err)
	}
}

// Killing the active controller elects another; admin requests keep
// working; the killed node rejoins after a restart.
func TestKillActiveController(t *testing.T) {
	c := startCluster(t, 3)
	m := c.waitConverged(30*time.Second, "a controller", func(m *kmsg.MetadataResponse) bool { return m.ControllerID > 0 })
	old := m.ControllerID
	c.node(old).kill9()
	c.waitConverged(30*time.Second, "a new controller", func(m *kmsg.MetadataResponse) bool {
		return m.ControllerID > 0 && m.ControllerID != old
	})
	survivor := c.alive()[0]
	createTopicOn(t, survivor.addr, "after-failover", 3, 2)
	c.waitConverged(30*time.Second, "after-failover led", allLed("after-failover", aliveIDs(c)))

	c.node(old).start()
	c.waitConverged(30*time.Second, "the old controller back", func(m *kmsg.MetadataResponse) bool { return len(m.Brokers) == 3 })
}

// kill -9 a broker: its partitions get new leaders from the ISR. Repeated
// killTimes, reporting the time from the kill to every partition being led
// by a live broker.
func TestKillBrokerMovesLeadership(t *testing.T) {
	kills := 10
	if testing.Short() {
		kills = 3
	}
	c := startCluster(t, 3)
	createTopicOn(t, c.node(1).addr, "moving", 6, 3)
	c.waitConverged(30*time.Second, "moving led", allLed("moving", aliveIDs(c)))
	var took []time.Duration
	for i := range kills {
		victim := c.brokers[i%3]
		start := time.Now()
		victim.kill9()
		c.waitConverged(30*time.Second, "leaders after kill", allLed("moving", aliveIDs(c)))
		took = append(took, time.Since(start))
		victim.start()
		// As an operator would: the next kill waits until the restarted
		// broker is back in every ISR, or a partition whose ISR shrank to
		// the next victim alone would rightly go offline.
		c.waitConverged(30*time.Second, "restarted broker back in every ISR", fullISR(c, "moving", 6, 3))
	}
	slices.Sort(took)
	t.Logf("kill -9 to live leaders for all partitions over %d kills: median %v, max %v, all %v",
		kills, took[len(took)/2].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond), took)
}

// A fourth node with process.roles=broker joins as a Raft non-voter,
// registers, and takes replicas.
func TestBrokerOnlyNodeJoins(t *testing.T) {
	c := startCluster(t, 3)
	c.addBrokerOnly()
	c.waitConverged(30*time.Second, "4 brokers", func(m *kmsg.MetadataResponse) bool { return len(m.Brokers) == 4 })
	createTopicOn(t, c.node(4).addr, "four", 4, 4)
	c.waitConverged(30*time.Second, "four led", allLed("four", aliveIDs(c)))
}
