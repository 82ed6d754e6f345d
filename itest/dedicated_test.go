package itest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/clustercheck"
	"github.com/kbroker/kbroker/internal/testutil"
)

// startDedicated starts nCtrl controller-only nodes (ids 1..nCtrl, the
// Raft voters, each with an admin listener for /readyz and /metrics) and
// nBroker broker-only nodes (ids nCtrl+1.., Raft non-voters), all
// gossiping, and waits until each is ready. As startCluster, a start that
// lost a reserved port is retried on new ports.
func startDedicated(t testing.TB, nCtrl, nBroker int, sets ...string) *testCluster {
	t.Helper()
	for attempt := 1; ; attempt++ {
		c, err := tryStartDedicated(t, nCtrl, nBroker, sets)
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

func tryStartDedicated(t testing.TB, nCtrl, nBroker int, sets []string) (*testCluster, error) {
	n := nCtrl + nBroker
	ports := testutil.MustReservePorts(t, 3*n)
	c := &testCluster{t: t, sets: append(slices.Clone(clusterTiming), sets...)}
	var voters []string
	for i := range nCtrl {
		voters = append(voters, fmt.Sprintf("%d@%s", i+1, ports.Addr(3*i+1)))
	}
	for i := range n {
		c.gossip = append(c.gossip, ports.Addr(3*i+2))
	}
	c.voters = strings.Join(voters, ",")
	for i := range n {
		// Slot 0 is the client listener of a broker and the admin
		// listener of a controller.
		if i < nCtrl {
			b := c.newNode(i+1, "", ports.Addr(3*i+1), ports.Addr(3*i+2),
				"process.roles=controller", "admin.listener="+ports.Addr(3*i))
			b.controllerOnly, b.admin = true, ports.Addr(3*i)
			c.brokers = append(c.brokers, b)
			continue
		}
		c.brokers = append(c.brokers, c.newNode(i+1, ports.Addr(3*i), ports.Addr(3*i+1), ports.Addr(3*i+2), "process.roles=broker"))
	}
	ports.MustRelease(c.t)
	for _, b := range c.brokers {
		b.launch()
	}
	for _, b := range c.brokers {
		if err := b.ready(); err != nil {
			return c, fmt.Errorf("%w; log tail:\n%s", err, b.logTail(logTailLines))
		}
	}
	return c, nil
}

// raftLeader returns the controller-only node whose /metrics says it is
// the Raft leader, i.e. the active controller, or an error.
func (c *testCluster) raftLeader() (int32, error) {
	var leaders []int32
	for i, b := range c.brokers {
		if !b.controllerOnly || !b.running() {
			continue
		}
		cl := http.Client{Timeout: 2 * time.Second}
		resp, err := cl.Get("http://" + b.admin + "/metrics")
		if err != nil {
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(body), `kbroker_raft_state{state="Leader"} 1`) {
			leaders = append(leaders, int32(i+1))
		}
	}
	if len(leaders) != 1 {
		return -1, fmt.Errorf("controllers reporting Raft leader: %v", leaders)
	}
	return leaders[0], nil
}

// waitRaftLeader waits until exactly one running controller is the Raft
// leader and, if not is > 0, it is not node not.
func (c *testCluster) waitRaftLeader(timeout time.Duration, not int32) int32 {
	c.t.Helper()
	var id int32
	testutil.Eventually(c.t, timeout, func() error {
		l, err := c.raftLeader()
		if err != nil {
			return err
		}
		if l == not {
			return fmt.Errorf("node %d still leads", not)
		}
		id = l
		return nil
	}, "an active controller other than %d", not)
	return id
}

// describeClusterFrom sends DescribeCluster v2 with fenced brokers to addr.
func describeClusterFrom(ctx context.Context, addr string) (*kmsg.DescribeClusterResponse, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0), kgo.DialTimeout(time.Second))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req := kmsg.NewPtrDescribeClusterRequest()
	req.EndpointType = 1
	req.IncludeFencedBrokers = true
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	if resp.ErrorCode != 0 {
		return nil, fmt.Errorf("DescribeCluster from %s: error %d", addr, resp.ErrorCode)
	}
	return resp, nil
}

// brokerIDs returns the ids of a Metadata response's brokers, sorted.
func brokerIDs(m *kmsg.MetadataResponse) []int32 {
	var ids []int32
	for _, b := range m.Brokers {
		ids = append(ids, b.NodeID)
	}
	slices.Sort(ids)
	return ids
}

// loadProducer produces acks=all with franz-go's idempotent defaults to
// topic, round robin over its partitions, perTick records every tick
// until finish (or limit records); it records every acknowledgement
// (value and time) in acks and clock.
type loadProducer struct {
	cl    *kgo.Client
	acks  *acks
	clock clustercheck.AckTimes
	began time.Time

	stopOnce sync.Once
	stop     chan struct{}
	done     chan struct{}
	mu       sync.Mutex
	sent     int
	samples  []string
}

func startLoad(t testing.TB, c *testCluster, topic string, perTick int, tick time.Duration, limit int) *loadProducer {
	l := &loadProducer{
		// Round robin: every partition gets a record every few ms, so
		// a gap between its acknowledgements is its unavailability
		// (a sticky partitioner may leave a partition idle for a while).
		cl:    clusterClient(t, c, append(producerOpts(), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))...),
		acks:  newAcks(),
		began: time.Now(),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-l.stop
		cancel()
	}()
	go func() {
		defer close(l.done)
		ticker := time.NewTicker(tick)
		defer ticker.Stop()
		for i := 0; i < limit; {
			for j := 0; j < perTick && i < limit; j, i = j+1, i+1 {
				v := fmt.Sprintf("v-%07d", i)
				l.mu.Lock()
				l.sent++
				l.mu.Unlock()
				// The record context is not ctx: a stop must not fail
				// records already handed over (Flush waits for them).
				l.cl.Produce(context.Background(), &kgo.Record{Topic: topic, Value: []byte(v)}, func(r *kgo.Record, err error) {
					if err != nil {
						l.acks.Fail()
						l.mu.Lock()
						if len(l.samples) < 5 {
							l.samples = append(l.samples, fmt.Sprintf("%s: %v", v, err))
						}
						l.mu.Unlock()
						return
					}
					l.clock.Add(r.Partition, time.Now())
					l.acks.Ack(r.Partition, r.Offset, v)
				})
			}
			select {
			case <-ticker.C:
			case <-ctx.Done():
				return
			}
		}
	}()
	return l
}

// finish stops handing over records and waits until every record handed
// over is acknowledged or failed; it returns when that was.
func (l *loadProducer) finish(t testing.TB) time.Time {
	t.Helper()
	l.stopOnce.Do(func() { close(l.stop) })
	<-l.done
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := l.cl.Flush(ctx); err != nil {
		t.Errorf("flush: %v (%d acknowledged, %d failed)", err, l.acks.Count(), l.acks.Failed())
	}
	end := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	t.Logf("load: %d records handed over in %v; %d acknowledged in all (preloads included), %d failed (samples: %v)",
		l.sent, end.Sub(l.began).Round(time.Millisecond), l.acks.Count(), l.acks.Failed(), l.samples)
	if l.acks.Failed() > 0 {
		t.Errorf("%d acks=all records failed", l.acks.Failed())
	}
	return end
}

// compareAssigned checks, for each partition of topic, that the replicas
// m assigns it hold byte-identical logs below hws[partition].
func compareAssigned(t testing.TB, c *testCluster, m *kmsg.MetadataResponse, topic string, hws map[int32]int64) {
	t.Helper()
	ps := partStates(m, topic)
	for _, p := range sortedParts(ps) {
		dirs := map[int32]string{}
		for _, id := range ps[p].Replicas {
			dirs[id] = c.node(id).dir
		}
		logs, err := clustercheck.ReplicaLogs(dirs, topic, p, hws[p])
		if err != nil {
			t.Errorf("%s-%d: %v", topic, p, err)
			continue
		}
		if err := clustercheck.CompareReplicas(logs, p, hws[p]); err != nil {
			t.Error(err)
		}
	}
}

func sortedParts[V any](m map[int32]V) []int32 {
	var out []int32
	for p := range m {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// TestDedicatedControllers runs 3 process.roles=controller nodes (the Raft
// voters) and 3 broker-only nodes. The controllers never show up as
// brokers (Metadata, DescribeCluster with fenced brokers), never get a
// replica, do not speak the Kafka protocol to clients, and are never
// named as the controller to clients (as Kafka, a live broker is: clients
// cannot reach a controller). An acks=all producer runs while the active
// controller is killed -9 twice (restarted in between); topics can be
// created after each kill, and every acknowledged record reads back.
func TestDedicatedControllers(t *testing.T) {
	const parts = 6
	c := startDedicated(t, 3, 3, "min.insync.replicas=2")
	keepLogs(t, c)
	isBroker := func(id int32) bool { return id >= 4 && id <= 6 }
	brokersOnly := func(m *kmsg.MetadataResponse) error {
		if got := brokerIDs(m); !slices.Equal(got, []int32{4, 5, 6}) {
			return fmt.Errorf("metadata lists brokers %v, want [4 5 6]", got)
		}
		if !isBroker(m.ControllerID) {
			return fmt.Errorf("metadata names %d as the controller, not a broker a client can reach", m.ControllerID)
		}
		for _, tp := range m.Topics {
			for _, p := range tp.Partitions {
				for _, r := range p.Replicas {
					if !isBroker(r) {
						return fmt.Errorf("%s-%d has a replica on node %d", *tp.Topic, p.Partition, r)
					}
				}
			}
		}
		return nil
	}
	topic := topicName(t)
	createReplicated(t, c, topic, parts, 3, nil)
	m := c.waitConverged(30*time.Second, "brokers 4-6 with "+topic, func(m *kmsg.MetadataResponse) bool { return brokersOnly(m) == nil })
	if err := brokersOnly(m); err != nil {
		t.Fatal(err)
	}
	// Not even as fenced brokers: a controller-only node never registers.
	describedBrokersOnly := func() {
		t.Helper()
		for _, b := range c.alive() {
			dc, err := describeClusterFrom(context.Background(), b.addr)
			if err != nil {
				t.Fatal(err)
			}
			var ids []int32
			for _, br := range dc.Brokers {
				ids = append(ids, br.NodeID)
			}
			slices.Sort(ids)
			if !slices.Equal(ids, []int32{4, 5, 6}) || !isBroker(dc.ControllerID) {
				t.Fatalf("DescribeCluster (fenced included) from %s: brokers %v controller %d, want brokers [4 5 6] and one of them", b.addr, ids, dc.ControllerID)
			}
		}
	}
	describedBrokersOnly()

	// No Kafka client traffic on a controller: its only listener is the
	// controller listener, which speaks raft and the controller RPC and
	// closes a connection that starts like a Kafka request.
	for i := range 3 {
		ctrl := c.brokers[i]
		_, err := clustercheck.MetadataFrom(context.Background(), ctrl.ctrlAddr)
		if err == nil {
			t.Fatalf("controller %d answered Metadata on its controller listener %s", i+1, ctrl.ctrlAddr)
		}
		t.Logf("Metadata to controller %d's controller listener: %v", i+1, err)
	}

	leader := c.waitRaftLeader(30*time.Second, 0)
	load := startLoad(t, c, topic, 5, 10*time.Millisecond, 100_000)
	var faults []clustercheck.Fault
	created := []string{topic}
	for kill := 1; kill <= 2; kill++ {
		time.Sleep(2 * time.Second)
		victim := c.node(leader)
		faults = append(faults, clustercheck.Fault{Kind: fmt.Sprintf("kill %d (controller %d)", kill, leader), Start: time.Now()})
		killed := time.Now()
		victim.kill9()
		next := c.waitRaftLeader(30*time.Second, leader)
		elected := time.Since(killed)
		// A topic created through a broker right after the kill: the
		// broker forwards to the new active controller.
		name := fmt.Sprintf("%s-after-kill-%d", topic, kill)
		createStart := time.Now()
		createReplicated(t, c, name, 3, 3, nil)
		created = append(created, name)
		t.Logf("kill %d: controller %d killed; node %d active after %v; topic created and led %v later",
			kill, leader, next, elected.Round(time.Millisecond), time.Since(createStart).Round(time.Millisecond))
		victim.start()
		leader = next
	}
	time.Sleep(2 * time.Second)
	end := load.finish(t)

	gaps := clustercheck.LongestGaps(load.clock.Snapshot(), faults, end)
	for _, f := range faults {
		g := gaps[f.Kind]
		t.Logf("%s: longest gap between a partition's acknowledgements %v (p%d)", f.Kind, g.Duration().Round(time.Millisecond), g.Partition)
		if g.Duration() > 30*time.Second {
			t.Errorf("%s: p%d had no acknowledgement for %v", f.Kind, g.Partition, g.Duration())
		}
	}

	m = c.waitConverged(30*time.Second, "full ISR on every topic", func(m *kmsg.MetadataResponse) bool {
		for _, name := range created {
			if !fullISR(c, name, len(partStates(m, name)), 3)(m) || len(partStates(m, name)) == 0 {
				return false
			}
		}
		return brokersOnly(m) == nil
	})
	if err := brokersOnly(m); err != nil {
		t.Fatal(err)
	}
	describedBrokersOnly() // the restarted controllers did not register either
	got := consumeAll(t, c.alive()[0], topic)
	checkLogOnce(t, load.acks, got)
	compareAssigned(t, c, m, topic, endOffsets(t, c.alive()[0], topic))
	// The controllers hold no partition of any topic.
	for i := range 3 {
		for _, name := range created {
			if ds := topicDirs(t, c.brokers[i].dir, name); len(ds) > 0 {
				t.Errorf("controller %d has logs of %s: %v", i+1, name, ds)
			}
		}
	}
}

// topicDirs lists the partition directories of topic under logDir.
func topicDirs(t testing.TB, logDir, topic string) []string {
	t.Helper()
	ents, err := os.ReadDir(logDir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), topic+"-")
		if !ok || !e.IsDir() {
			continue
		}
		if _, err := strconv.Atoi(rest); err == nil {
			out = append(out, e.Name())
		}
	}
	return out
}
