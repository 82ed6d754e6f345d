package itest

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
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

func startCluster(t testing.TB, n int, sets ...string) *testCluster {
	t.Helper()
	ports := freePorts(t, 3*n)
	c := &testCluster{t: t, sets: append(slices.Clone(clusterTiming), sets...)}
	var voters []string
	for i := range n {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, ports[3*i+1]))
		c.gossip = append(c.gossip, fmt.Sprintf("127.0.0.1:%d", ports[3*i+2]))
	}
	c.voters = strings.Join(voters, ",")
	for i := range n {
		b := c.newNode(i+1, ports[3*i], ports[3*i+1], ports[3*i+2])
		c.brokers = append(c.brokers, b)
		b.launch()
	}
	// The quorum forms only once a majority runs, so wait after all
	// have been launched.
	for _, b := range c.brokers {
		b.waitReady()
	}
	return c
}

func (c *testCluster) newNode(id, port, ctrl, gossip int, extra ...string) *broker {
	sets := append([]string{
		fmt.Sprintf("gossip.listener=127.0.0.1:%d", gossip),
		"gossip.seeds=" + strings.Join(c.gossip, ","),
	}, c.sets...)
	sets = append(sets, extra...)
	return newBroker(c.t, id, c.t.TempDir(), fmt.Sprintf("127.0.0.1:%d", port),
		fmt.Sprintf("127.0.0.1:%d", ctrl), c.voters, sets...)
}

// addBrokerOnly starts one more node with process.roles=broker.
func (c *testCluster) addBrokerOnly() *broker {
	c.t.Helper()
	ports := freePorts(c.t, 3)
	b := c.newNode(len(c.brokers)+1, ports[0], ports[1], ports[2], "process.roles=broker")
	c.brokers = append(c.brokers, b)
	b.start()
	return b
}

func (c *testCluster) node(id int32) *broker { return c.brokers[id-1] }

func (c *testCluster) alive() []*broker {
	var out []*broker
	for _, b := range c.brokers {
		if b.running() {
			out = append(out, b)
		}
	}
	return out
}

// metadata asks one broker for the whole cluster's metadata.
func metadataFrom(t testing.TB, addr string) (*kmsg.MetadataResponse, error) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0), kgo.RetryTimeout(time.Second), kgo.DialTimeout(time.Second))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = nil
	// Ask the seed itself, not whichever broker the client picks.
	return req.RequestWith(ctx, cl)
}

// describe renders the parts of a Metadata response every broker must
// agree on.
func describe(m *kmsg.MetadataResponse) string {
	var b strings.Builder
	var ids []int32
	for _, br := range m.Brokers {
		ids = append(ids, br.NodeID)
	}
	slices.Sort(ids)
	fmt.Fprintf(&b, "brokers %v controller %d\n", ids, m.ControllerID)
	topics := slices.Clone(m.Topics)
	sort.Slice(topics, func(i, j int) bool { return *topics[i].Topic < *topics[j].Topic })
	for _, t := range topics {
		for _, p := range t.Partitions {
			fmt.Fprintf(&b, "%s/%d leader %d epoch %d replicas %v isr %v\n", *t.Topic, p.Partition, p.Leader, p.LeaderEpoch, p.Replicas, p.ISR)
		}
	}
	return b.String()
}

// waitConverged polls every running broker until their metadata agree
// and cond holds for it.
func (c *testCluster) waitConverged(timeout time.Duration, what string, cond func(*kmsg.MetadataResponse) bool) *kmsg.MetadataResponse {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for attempt := 0; attempt < 1000 && time.Now().Before(deadline); attempt++ {
		var first *kmsg.MetadataResponse
		agree := true
		for _, b := range c.alive() {
			m, err := metadataFrom(c.t, b.addr)
			if err != nil {
				agree, last = false, err.Error()
				break
			}
			if first == nil {
				first = m
			} else if describe(m) != describe(first) {
				agree, last = false, fmt.Sprintf("%s says\n%s\nbut %s says\n%s", c.alive()[0].addr, describe(first), b.addr, describe(m))
				break
			}
		}
		if agree && first != nil {
			if cond(first) {
				return first
			}
			last = describe(first)
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("cluster did not converge on %s within %v; last:\n%s", what, timeout, last)
	return nil
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
	m = c.waitConverged(30*time.Second, "a new controller", func(m *kmsg.MetadataResponse) bool {
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
