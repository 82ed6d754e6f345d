package itest

import (
	"context"
	crand "crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/clustercheck"
	"github.com/kbroker/kbroker/internal/testutil"
)

// reassignPlan is Kafka's reassignment JSON, as `kbroker admin reassign
// --generate` prints it.
type reassignPlan struct {
	Version    int `json:"version"`
	Partitions []struct {
		Topic     string   `json:"topic"`
		Partition int32    `json:"partition"`
		Replicas  []int32  `json:"replicas"`
		LogDirs   []string `json:"log_dirs"`
	} `json:"partitions"`
}

// adminCLI runs `kbroker admin args...` against bootstrap and returns its
// stdout; a non-zero exit fails the test.
func adminCLI(t testing.TB, bootstrap string, args ...string) []byte {
	t.Helper()
	args = append([]string{"admin"}, append(args, "--bootstrap-server", bootstrap, "--output", "json")...)
	cmd := exec.Command(brokerBin, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kbroker %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return out
}

// generatePlan runs `kbroker admin reassign --generate` for topic on
// brokers and returns the proposed plan and its file, for --verify.
func generatePlan(t testing.TB, bootstrap, topic, brokers string) (reassignPlan, string) {
	t.Helper()
	out := adminCLI(t, bootstrap, "reassign", "--generate", "--topics", topic, "--brokers", brokers)
	var doc struct {
		Current  reassignPlan `json:"current"`
		Proposed reassignPlan `json:"proposed"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("reassign --generate output: %v\n%s", err, out)
	}
	path := filepath.Join(t.TempDir(), "plan.json")
	b, _ := json.Marshal(doc.Proposed)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return doc.Proposed, path
}

// executePlan starts the plan's reassignments with kadm and waits until
// ListPartitionReassignments (every topic) lists none; it returns how
// long that took.
func executePlan(t testing.TB, cl *kgo.Client, plan reassignPlan, timeout time.Duration) time.Duration {
	t.Helper()
	adm := kadm.NewClient(cl)
	var req kadm.AlterPartitionAssignmentsReq
	for _, p := range plan.Partitions {
		req.Assign(p.Topic, p.Partition, p.Replicas)
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	res, err := adm.AlterPartitionAssignments(ctx, req)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatalf("AlterPartitionAssignments: %v", err)
	}
	testutil.Eventually(t, timeout, func() error {
		lctx, lcancel := context.WithTimeout(ctx, 5*time.Second)
		defer lcancel()
		resp, err := kmsg.NewPtrListPartitionReassignmentsRequest().RequestWith(lctx, cl)
		if err != nil {
			return err
		}
		if resp.ErrorCode != 0 {
			return fmt.Errorf("ListPartitionReassignments: error %d", resp.ErrorCode)
		}
		n := 0
		for _, tp := range resp.Topics {
			n += len(tp.Partitions)
		}
		if n > 0 {
			return fmt.Errorf("%d reassignments in progress", n)
		}
		return nil
	}, "reassignments finishing")
	return time.Since(start)
}

// verifyPlan runs `kbroker admin reassign --verify` on the plan file and
// fails unless every partition is complete.
func verifyPlan(t testing.TB, bootstrap, path string) {
	t.Helper()
	out := adminCLI(t, bootstrap, "reassign", "--verify", path)
	var rows []struct {
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
		Status    string `json:"status"`
	}
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatalf("reassign --verify output: %v\n%s", err, out)
	}
	for _, r := range rows {
		if r.Status != "complete" {
			t.Errorf("reassign --verify: %s-%d %q", r.Topic, r.Partition, r.Status)
		}
	}
}

// leaderWatch polls Metadata from a fixed set of brokers and records, per
// partition of topic, the longest stretch it was seen without a leader
// (between the first poll that saw it so and the first that saw a leader
// again; the poll interval bounds the precision).
type leaderWatch struct {
	mu      sync.Mutex
	since   map[int32]time.Time
	longest map[int32]time.Duration
	stop    chan struct{}
	done    chan struct{}
}

func watchLeaders(addrs []string, topic string, every time.Duration) *leaderWatch {
	w := &leaderWatch{since: map[int32]time.Time{}, longest: map[int32]time.Duration{},
		stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
			m, err := clustercheck.MetadataFrom(context.Background(), addrs[i%len(addrs)])
			if err != nil {
				continue
			}
			now := time.Now()
			w.mu.Lock()
			for p, s := range partStates(m, topic) {
				from, down := w.since[p]
				switch {
				case (s.Leader < 0 || s.ErrorCode != 0) && !down:
					w.since[p] = now
				case s.Leader >= 0 && s.ErrorCode == 0 && down:
					w.longest[p] = max(w.longest[p], now.Sub(from))
					delete(w.since, p)
				}
			}
			w.mu.Unlock()
		}
	}()
	return w
}

// finish stops the watch and returns the longest leaderless stretch of
// any partition (still leaderless ones count to now) and its partition.
func (w *leaderWatch) finish() (time.Duration, int32) {
	close(w.stop)
	<-w.done
	now := time.Now()
	var worst time.Duration
	part := int32(-1)
	for p, d := range w.longest {
		if d > worst {
			worst, part = d, p
		}
	}
	for p, from := range w.since {
		if d := now.Sub(from); d > worst {
			worst, part = d, p
		}
	}
	return worst, part
}

// TestGrowAndDrain adds a fourth (broker-only) node to a running 3-node
// cluster under acks=all load, moves a balanced share of a 12-partition
// RF=3 topic onto it with the plan `kbroker admin reassign --generate`
// prints (executed with kadm, verified with --verify), then drains broker
// 1 (a controller voter too) onto 2, 3 and 4, stops it and unregisters
// it. No acknowledged record may be lost, the final replicas must be
// byte-identical, and broker 1 must be gone from Metadata and
// DescribeCluster. The longest gap between a partition's
// acknowledgements and the longest leaderless stretch seen in Metadata
// are logged per phase (with only a generous sanity bound).
func TestGrowAndDrain(t *testing.T) {
	const parts = 12
	c := startCluster(t, 3, "min.insync.replicas=2")
	keepLogs(t, c)
	topic := topicName(t)
	createReplicated(t, c, topic, parts, 3, nil)
	bootstrap := c.node(2).addr + "," + c.node(3).addr
	admCl := clusterClient(t, c)

	// Nodes 2 and 3 run throughout: the watch asks them.
	watch := watchLeaders([]string{c.node(2).addr, c.node(3).addr}, topic, 200*time.Millisecond)
	load := startLoad(t, c, topic, 5, 10*time.Millisecond, 1_000_000)
	// Some data to move: preloaded (acknowledged too, so checked too)
	// while the load runs.
	// Random padding: franz-go compresses batches (snappy), and a
	// repeated byte would leave nothing to move.
	pre := pick(5000, 30000)
	var vals []string
	pad := make([]byte, 500)
	for i := range pre {
		_, _ = crand.Read(pad)
		vals = append(vals, fmt.Sprintf("pre-%06d-%x", i, pad))
	}
	start := time.Now()
	preCl := clusterClient(t, c, append(producerOpts(), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))...)
	if errs := produceAll(t, preCl, topic, load.acks, vals, 60*time.Second); len(errs) > 0 {
		t.Fatalf("%d preload records failed, first: %v", len(errs), errs[0])
	}
	preCl.Close()
	t.Logf("preloaded %d records of 1 KB in %v", pre, time.Since(start).Round(time.Millisecond))
	var phases []clustercheck.Fault
	phase := func(name string) time.Time {
		now := time.Now()
		phases = append(phases, clustercheck.Fault{Kind: name, Start: now})
		return now
	}
	time.Sleep(2 * time.Second)

	// Grow: broker 4 joins and takes its share.
	start = phase("add broker 4")
	c.addBrokerOnly()
	c.waitConverged(30*time.Second, "4 brokers", func(m *kmsg.MetadataResponse) bool { return len(m.Brokers) == 4 })
	t.Logf("broker 4 registered and seen by every broker after %v", time.Since(start).Round(time.Millisecond))

	m, err := metadataFrom(t, c.node(2).addr)
	if err != nil {
		t.Fatal(err)
	}
	before := partStates(m, topic)
	grow, growFile := generatePlan(t, bootstrap, topic, "1,2,3,4")
	changed, onto4, leadersOn4 := 0, 0, 0
	for _, p := range grow.Partitions {
		if !slices.Equal(before[p.Partition].Replicas, p.Replicas) {
			changed++
		}
		if slices.Contains(p.Replicas, 4) {
			onto4++
		}
		if p.Replicas[0] == 4 {
			leadersOn4++
		}
	}
	if onto4 < parts/3 {
		t.Fatalf("the generated plan puts %d of %d partitions on broker 4, want at least a third", onto4, parts)
	}
	phase("grow reassignment")
	took := executePlan(t, admCl, grow, 60*time.Second)
	t.Logf("grow: plan changes %d of %d partitions, %d get a replica on broker 4 (%d preferred-leader); all reassignments done in %v",
		changed, parts, onto4, leadersOn4, took.Round(time.Millisecond))
	verifyPlan(t, bootstrap, growFile)
	c.waitConverged(30*time.Second, "the grow plan's replicas with full ISR", func(m *kmsg.MetadataResponse) bool {
		ps := partStates(m, topic)
		for _, p := range grow.Partitions {
			if !slices.Equal(ps[p.Partition].Replicas, p.Replicas) {
				return false
			}
		}
		return fullISR(c, topic, parts, 3)(m)
	})

	// Drain broker 1 onto 2, 3 and 4.
	drain, drainFile := generatePlan(t, bootstrap, topic, "2,3,4")
	phase("drain broker 1")
	took = executePlan(t, admCl, drain, 60*time.Second)
	t.Logf("drain: all %d partitions' reassignments done in %v", len(drain.Partitions), took.Round(time.Millisecond))
	verifyPlan(t, bootstrap, drainFile)
	c.waitConverged(30*time.Second, "no replica on broker 1, full ISR", func(m *kmsg.MetadataResponse) bool {
		for _, p := range partStates(m, topic) {
			if slices.Contains(p.Replicas, 1) || slices.Contains(p.ISR, 1) || p.Leader == 1 {
				return false
			}
		}
		return fullISR(c, topic, parts, 3)(m)
	})

	// Stop it (2 of the 3 controller voters remain) and unregister it.
	start = phase("stop broker 1")
	c.node(1).stop()
	testutil.Eventually(t, 30*time.Second, func() error {
		dc, err := describeClusterFrom(context.Background(), c.node(2).addr)
		if err != nil {
			return err
		}
		for _, b := range dc.Brokers {
			if b.NodeID == 1 && !b.IsFenced {
				return fmt.Errorf("broker 1 not fenced yet")
			}
		}
		return nil
	}, "broker 1 fenced after its stop")
	t.Logf("broker 1 stopped and fenced after %v", time.Since(start).Round(time.Millisecond))
	start = phase("unregister broker 1")
	ureq := kmsg.NewPtrUnregisterBrokerRequest()
	ureq.BrokerID = 1
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	uresp, err := ureq.RequestWith(ctx, admCl)
	cancel()
	if err != nil || uresp.ErrorCode != 0 {
		t.Fatalf("UnregisterBroker 1: %v, error %d %v", err, uresp.ErrorCode, uresp.ErrorMessage)
	}
	// Metadata left the fenced broker 1 out already; DescribeCluster
	// with fenced brokers shows the registration is gone.
	testutil.Eventually(t, 30*time.Second, func() error {
		for _, b := range c.alive() {
			dc, err := describeClusterFrom(context.Background(), b.addr)
			if err != nil {
				return err
			}
			for _, br := range dc.Brokers {
				if br.NodeID == 1 {
					return fmt.Errorf("DescribeCluster (fenced included) from %s still lists broker 1", b.addr)
				}
			}
		}
		return nil
	}, "broker 1's registration gone from every broker")
	c.waitConverged(30*time.Second, "brokers [2 3 4]", func(m *kmsg.MetadataResponse) bool {
		return slices.Equal(brokerIDs(m), []int32{2, 3, 4})
	})
	t.Logf("broker 1 unregistered and gone from every broker's metadata after %v", time.Since(start).Round(time.Millisecond))

	time.Sleep(time.Second)
	end := load.finish(t)
	leaderless, lp := watch.finish()
	t.Logf("longest stretch a partition was seen without a leader (200 ms polls): %v (p%d)", leaderless.Round(time.Millisecond), lp)
	gaps := clustercheck.LongestGaps(load.clock.Snapshot(), phases, end)
	for _, f := range append([]clustercheck.Fault{{Kind: ""}}, phases...) {
		g, ok := gaps[f.Kind]
		if !ok {
			continue
		}
		name := f.Kind
		if name == "" {
			name = "before any phase"
		}
		t.Logf("%s: longest gap between a partition's acknowledgements %v (p%d)", name, g.Duration().Round(time.Millisecond), g.Partition)
		// A sanity bound only: the machine is shared and noisy.
		if g.Duration() > 30*time.Second {
			t.Errorf("%s: p%d had no acknowledgement for %v", name, g.Partition, g.Duration())
		}
	}

	m = c.waitConverged(30*time.Second, "full ISR on brokers 2-4", fullISR(c, topic, parts, 3))
	got := consumeAll(t, c.node(2), topic)
	checkLogOnce(t, load.acks, got)
	compareAssigned(t, c, m, topic, endOffsets(t, c.node(2), topic))
	if ds := topicDirs(t, c.node(1).dir, topic); len(ds) > 0 {
		t.Logf("broker 1 still holds %d partition directories of %s after the drain", len(ds), topic)
	}
}
