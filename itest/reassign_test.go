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
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testutil"
)

// Reassignments that move data while things go wrong: the active
// controller is killed in the middle of one, or the operator cancels one.
// Both throttle the move (Kafka's replication throttle, as
// kafka-reassign-partitions.sh --throttle sets it) so it is still copying
// when the fault comes, whatever the machine's speed.

// reassignSetup is a 3-node cluster (min.insync.replicas=2) with a
// broker-only node 4, a topic of parts partitions with RF 3 on brokers
// 1-3 preloaded with about mb MB of random data, and an acks=all load
// running on it.
type reassignSetup struct {
	c      *testCluster
	topic  string
	parts  int
	adm    *kadm.Client
	admCl  *kgo.Client
	load   *loadProducer
	before map[int32][]int32 // the replicas before any move
}

func setupReassign(t *testing.T, parts, mb int) *reassignSetup {
	t.Helper()
	// Two 1 s samples: a throttle bites after about a second instead of
	// letting the first ten seconds' worth pass (11 samples, Kafka's
	// default). Small follower fetches (and small preload batches: one
	// batch is always returned) so one fetch, which the throttle cannot
	// cut short, does not copy a whole partition.
	c := startCluster(t, 3, "min.insync.replicas=2", "replication.quota.window.num=2", "replica.fetch.max.bytes=65536")
	keepLogs(t, c)
	s := &reassignSetup{c: c, topic: topicName(t), parts: parts}
	createReplicated(t, c, s.topic, int32(parts), 3, nil)
	c.addBrokerOnly()
	c.waitConverged(30*time.Second, "4 brokers", func(m *kmsg.MetadataResponse) bool { return len(m.Brokers) == 4 })
	s.admCl = clusterClient(t, c)
	s.adm = kadm.NewClient(s.admCl)

	s.load = startLoad(t, c, s.topic, 2, 10*time.Millisecond, 1_000_000)
	// Random values: the producer compresses batches, a repeated byte
	// would leave nothing to move.
	var vals []string
	pad := make([]byte, 1000)
	for i := range mb * 1000 {
		_, _ = crand.Read(pad)
		vals = append(vals, fmt.Sprintf("pre-%06d-%x", i, pad[:500]))
	}
	preCl := clusterClient(t, c, append(producerOpts(), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerBatchMaxBytes(64<<10))...)
	if errs := produceAll(t, preCl, s.topic, s.load.acks, vals, 60*time.Second); len(errs) > 0 {
		t.Fatalf("%d preload records failed, first: %v", len(errs), errs[0])
	}
	preCl.Close()
	m, err := metadataFrom(t, c.node(2).addr)
	if err != nil {
		t.Fatal(err)
	}
	s.before = map[int32][]int32{}
	for p, st := range partStates(m, s.topic) {
		s.before[p] = slices.Clone(st.Replicas)
	}
	return s
}

// onto4 is a plan moving the replica on broker from of every partition
// (-1: the last replica) onto broker 4, written as Kafka's reassignment
// JSON for `reassign --verify` and `--cancel`.
func (s *reassignSetup) onto4(t *testing.T, from int32) (reassignPlan, string) {
	var plan reassignPlan
	plan.Version = 1
	for p := range int32(s.parts) {
		target := slices.Clone(s.before[p])
		i := slices.Index(target, from)
		if i < 0 {
			i = len(target) - 1
		}
		target[i] = 4
		plan.Partitions = append(plan.Partitions, struct {
			Topic     string   `json:"topic"`
			Partition int32    `json:"partition"`
			Replicas  []int32  `json:"replicas"`
			LogDirs   []string `json:"log_dirs"`
		}{s.topic, p, target, []string{"any", "any", "any"}})
	}
	path := filepath.Join(t.TempDir(), "plan.json")
	b, _ := json.Marshal(plan)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return plan, path
}

// throttle sets bytesPerSec as the cluster-wide leader and follower
// replication throttle and lists the plan's replicas as throttled, as
// kafka-reassign-partitions.sh --throttle does: every current replica as
// a throttled leader, every added one as a throttled follower. It waits
// until every running broker reports the rates.
func (s *reassignSetup) throttle(t *testing.T, plan reassignPlan, bytesPerSec int) {
	t.Helper()
	var leaders, followers []string
	for _, p := range plan.Partitions {
		for _, b := range s.before[p.Partition] {
			leaders = append(leaders, fmt.Sprintf("%d:%d", p.Partition, b))
		}
		for _, b := range p.Replicas {
			if !slices.Contains(s.before[p.Partition], b) {
				followers = append(followers, fmt.Sprintf("%d:%d", p.Partition, b))
			}
		}
	}
	rate := fmt.Sprint(bytesPerSec)
	ll, fl := strings.Join(leaders, ","), strings.Join(followers, ",")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if res, err := s.adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
		{Name: "leader.replication.throttled.rate", Value: &rate},
		{Name: "follower.replication.throttled.rate", Value: &rate},
	}); err != nil || res[0].Err != nil {
		t.Fatalf("throttle rates: %v %+v", err, res)
	}
	if res, err := s.adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Name: "leader.replication.throttled.replicas", Value: &ll},
		{Name: "follower.replication.throttled.replicas", Value: &fl},
	}, s.topic); err != nil || res[0].Err != nil {
		t.Fatalf("throttled replicas: %v %+v", err, res)
	}
	s.waitRates(t, rate)
}

// unthrottle deletes the throttle configs and waits until no running
// broker reports a rate.
func (s *reassignSetup) unthrottle(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if res, err := s.adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.DeleteConfig, Name: "leader.replication.throttled.rate"},
		{Op: kadm.DeleteConfig, Name: "follower.replication.throttled.rate"},
	}); err != nil || res[0].Err != nil {
		t.Fatalf("delete throttle rates: %v %+v", err, res)
	}
	if res, err := s.adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.DeleteConfig, Name: "leader.replication.throttled.replicas"},
		{Op: kadm.DeleteConfig, Name: "follower.replication.throttled.replicas"},
	}, s.topic); err != nil || res[0].Err != nil {
		t.Fatalf("delete throttled replicas: %v %+v", err, res)
	}
	s.waitRates(t, "")
}

// waitRates waits until every running broker, asked itself, reports
// rate as both throttle rates ("": neither set dynamically).
func (s *reassignSetup) waitRates(t *testing.T, rate string) {
	t.Helper()
	for i, b := range s.c.brokers {
		if !b.running() {
			continue
		}
		id := int32(i + 1)
		testutil.Eventually(t, 30*time.Second, func() error {
			cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr))
			if err != nil {
				return err
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			req := kmsg.NewPtrDescribeConfigsRequest()
			r := kmsg.NewDescribeConfigsRequestResource()
			r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, fmt.Sprint(id)
			r.ConfigNames = []string{"leader.replication.throttled.rate", "follower.replication.throttled.rate"}
			req.Resources = append(req.Resources, r)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return err
			}
			for _, res := range resp.Resources {
				if res.ErrorCode != 0 {
					return fmt.Errorf("broker %d: DescribeConfigs error %d", id, res.ErrorCode)
				}
				for _, cfg := range res.Configs {
					dynamic := cfg.Source == kmsg.ConfigSourceDynamicDefaultBrokerConfig || cfg.Source == kmsg.ConfigSourceDynamicBrokerConfig
					switch {
					case rate != "" && (cfg.Value == nil || *cfg.Value != rate):
						return fmt.Errorf("broker %d: %s is %s, want %s", id, cfg.Name, deref(cfg.Value), rate)
					case rate == "" && dynamic:
						return fmt.Errorf("broker %d: %s still set dynamically to %s", id, cfg.Name, deref(cfg.Value))
					}
				}
			}
			return nil
		}, "broker %d reports throttle rate %q", id, rate)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// start starts the plan's reassignments with kadm.
func (s *reassignSetup) start(t *testing.T, plan reassignPlan) {
	t.Helper()
	var req kadm.AlterPartitionAssignmentsReq
	for _, p := range plan.Partitions {
		req.Assign(p.Topic, p.Partition, p.Replicas)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := s.adm.AlterPartitionAssignments(ctx, req)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatalf("AlterPartitionAssignments: %v", err)
	}
}

// inProgress is how many of the topic's partitions the controller lists
// as being reassigned, asked through addr.
func (s *reassignSetup) inProgress(addr string) (int, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrListPartitionReassignmentsRequest().RequestWith(ctx, cl)
	if err != nil {
		return 0, err
	}
	if resp.ErrorCode != 0 {
		return 0, fmt.Errorf("ListPartitionReassignments: error %d", resp.ErrorCode)
	}
	n := 0
	for _, tp := range resp.Topics {
		if tp.Topic == s.topic {
			n += len(tp.Partitions)
		}
	}
	return n, nil
}

// finish stops the load and checks every acknowledged record reads back
// once at its offset and that the replicas m assigns are byte-identical.
func (s *reassignSetup) finish(t *testing.T, isr int) {
	t.Helper()
	s.load.finish(t)
	m := s.c.waitConverged(60*time.Second, "full ISR", fullISR(s.c, s.topic, s.parts, isr))
	got := consumeAll(t, s.c.node(2), s.topic)
	checkLogOnce(t, s.load.acks, got)
	compareAssigned(t, s.c, m, s.topic, endOffsets(t, s.c.node(2), s.topic))
}

// partitionBytesOn sums the sizes broker id reports (DescribeLogDirs)
// for the topic's partitions.
func (s *reassignSetup) partitionBytesOn(t *testing.T, id int32) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	set := kadm.TopicsSet{}
	for p := range int32(s.parts) {
		set.Add(s.topic, p)
	}
	dirs, err := s.adm.DescribeBrokerLogDirs(ctx, id, set)
	if err != nil {
		t.Fatalf("DescribeLogDirs of broker %d: %v", id, err)
	}
	var n int64
	dirs.EachPartition(func(p kadm.DescribedLogDirPartition) {
		if p.Topic == s.topic {
			n += p.Size
		}
	})
	return n
}

// TestKillControllerDuringReassignment moves the replica on the active
// controller's node of every partition of a preloaded topic onto a new
// broker, throttled, under an acks=all producer, and kill -9s the active
// controller while the data is being copied. A new controller takes over
// with the reassignments still in progress (they are in the metadata
// log), the copy goes on, the throttle is removed through the new
// controller, and the reassignments complete with the old node still
// down: `reassign --verify` reports every partition complete and the
// ISR is full on the new replicas. The old node then restarts. No
// acknowledged record is lost or duplicated,
// and the final replicas are byte-identical.
func TestKillControllerDuringReassignment(t *testing.T) {
	const parts = 6
	s := setupReassign(t, parts, pick(3, 6))
	c := s.c
	m := c.waitConverged(30*time.Second, "a controller", func(m *kmsg.MetadataResponse) bool { return m.ControllerID > 0 })
	old := m.ControllerID
	plan, planFile := s.onto4(t, old)
	s.throttle(t, plan, 512<<10)
	s.start(t, plan)
	t.Logf("moving every partition's replica on broker %d (the active controller) onto broker 4 at 512 KB/s", old)

	// Wait until the copy is under way: broker 4 holds some of the data,
	// and the reassignments are still listed.
	testutil.Eventually(t, 30*time.Second, func() error {
		if got := s.partitionBytesOn(t, 4); got < 256<<10 {
			return fmt.Errorf("broker 4 holds %d bytes", got)
		}
		return nil
	}, "broker 4 receiving data")
	if m, err := metadataFrom(t, c.node(4).addr); err != nil || m.ControllerID != old {
		t.Fatalf("the active controller moved from %d during the setup (%v)", old, err)
	}
	n, err := s.inProgress(c.node(4).addr)
	if err != nil || n == 0 {
		t.Fatalf("want reassignments in progress before the kill, got %d (%v)", n, err)
	}
	moved := s.partitionBytesOn(t, 4)
	c.node(old).kill9()
	killed := time.Now()
	t.Logf("killed the active controller %d with %d reassignments in progress and %d KB on broker 4", old, n, moved>>10)
	c.waitConverged(30*time.Second, "a new controller", func(m *kmsg.MetadataResponse) bool {
		return m.ControllerID > 0 && m.ControllerID != old
	})
	t.Logf("new controller after %v", time.Since(killed).Round(time.Millisecond))
	// The new controller has the reassignments from the metadata log.
	n, err = s.inProgress(c.node(4).addr)
	if err != nil || n == 0 {
		t.Fatalf("want reassignments listed in progress after the failover, got %d (%v)", n, err)
	}
	t.Logf("%d reassignments listed in progress after the failover", n)

	// The copy goes on under the new controller (still throttled).
	testutil.Eventually(t, 30*time.Second, func() error {
		if got := s.partitionBytesOn(t, 4); got < moved+256<<10 {
			return fmt.Errorf("broker 4 holds %d bytes, %d at the kill", got, moved)
		}
		return nil
	}, "broker 4 receiving more data after the failover")
	s.load.waitAcks(t, 200)
	s.unthrottle(t)
	testutil.Eventually(t, 60*time.Second, func() error {
		n, err := s.inProgress(c.node(4).addr)
		if err == nil && n > 0 {
			err = fmt.Errorf("%d reassignments in progress", n)
		}
		return err
	}, "the reassignments completing after the failover")
	t.Logf("reassignments complete %v after the kill, broker %d still down", time.Since(killed).Round(time.Millisecond), old)
	verifyPlan(t, c.node(4).addr, planFile)
	onPlan := func(m *kmsg.MetadataResponse) bool {
		ps := partStates(m, s.topic)
		for _, p := range plan.Partitions {
			if !slices.Equal(ps[p.Partition].Replicas, p.Replicas) {
				return false
			}
		}
		return fullISR(c, s.topic, parts, 3)(m)
	}
	c.waitConverged(30*time.Second, "the plan's replicas with a full ISR, the old controller down", onPlan)
	s.load.waitAcks(t, 200)

	// The old controller comes back, as a broker of none of the topic's
	// partitions any more.
	c.node(old).start()
	c.waitConverged(30*time.Second, "4 brokers", func(m *kmsg.MetadataResponse) bool { return len(m.Brokers) == 4 })
	s.load.waitAcks(t, 200)
	// Kafka deletes such stray logs at start (KAFKA-14616); kbroker
	// keeps them until then: only logged here (see TestStrayLogsAfterRestart).
	if ds := topicDirs(t, c.node(old).dir, s.topic); len(ds) > 0 {
		t.Logf("broker %d keeps %d partition directories of %s it no longer hosts", old, len(ds), s.topic)
	}
	c.waitConverged(30*time.Second, "the plan's replicas with a full ISR", onPlan)
	s.finish(t, 3)
}

// TestCancelReassignment starts a throttled reassignment of every
// partition onto a new broker under an acks=all producer and cancels it
// with `kbroker admin reassign --cancel` while data is being copied: the
// controller lists no reassignment, every partition is back on its
// original replicas with a full ISR, broker 4 deletes the partial copies,
// a second cancel finds nothing to cancel, no acknowledged record is lost
// and the replicas are byte-identical.
func TestCancelReassignment(t *testing.T) {
	const parts = 4
	s := setupReassign(t, parts, pick(2, 4))
	c := s.c
	plan, planFile := s.onto4(t, -1)
	s.throttle(t, plan, 256<<10)
	s.start(t, plan)
	testutil.Eventually(t, 30*time.Second, func() error {
		if got := s.partitionBytesOn(t, 4); got < 128<<10 {
			return fmt.Errorf("broker 4 holds %d bytes", got)
		}
		return nil
	}, "broker 4 receiving data")
	if n, err := s.inProgress(c.node(1).addr); err != nil || n != parts {
		t.Fatalf("want %d reassignments in progress before the cancel, got %d (%v)", parts, n, err)
	}
	t.Logf("cancelling with %d KB copied onto broker 4", s.partitionBytesOn(t, 4)>>10)

	out := adminCLI(t, c.node(1).addr, "reassign", "--cancel", planFile)
	var rows []struct {
		Partition int32  `json:"partition"`
		Status    string `json:"status"`
		Error     string `json:"error"`
	}
	if err := json.Unmarshal(out, &rows); err != nil || len(rows) != parts {
		t.Fatalf("reassign --cancel output (%v): %s", err, out)
	}
	for _, r := range rows {
		if r.Status != "cancelled" || r.Error != "" {
			t.Errorf("cancel of partition %d: %q %q", r.Partition, r.Status, r.Error)
		}
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		n, err := s.inProgress(c.node(2).addr)
		if err == nil && n > 0 {
			err = fmt.Errorf("%d reassignments in progress", n)
		}
		return err
	}, "no reassignment listed after the cancel")
	c.waitConverged(30*time.Second, "the original replicas, without broker 4", func(m *kmsg.MetadataResponse) bool {
		for p, st := range partStates(m, s.topic) {
			if !slices.Equal(st.Replicas, s.before[p]) || slices.Contains(st.ISR, 4) {
				return false
			}
		}
		return true
	})
	s.load.waitAcks(t, 200)
	testutil.Eventually(t, 30*time.Second, func() error {
		if ds := topicDirs(t, c.node(4).dir, s.topic); len(ds) > 0 {
			return fmt.Errorf("broker 4 still has %v", ds)
		}
		return nil
	}, "broker 4 deleting the partial copies")

	// Nothing left to cancel: Kafka's NO_REASSIGNMENT_IN_PROGRESS, which
	// the CLI reports per partition and with a non-zero exit.
	cmdOut, err := adminCmd(c.node(1).addr, "reassign", "--cancel", planFile)
	if err == nil || !strings.Contains(cmdOut, "NO_REASSIGNMENT_IN_PROGRESS") {
		t.Errorf("second cancel: want NO_REASSIGNMENT_IN_PROGRESS and a failure, got %v:\n%s", err, cmdOut)
	}
	s.unthrottle(t)
	s.finish(t, 3)
}

// adminCmd runs `kbroker admin args...` against bootstrap and returns its
// combined output and exit error, for the failures adminCLI would fail
// the test on.
func adminCmd(bootstrap string, args ...string) (string, error) {
	args = append([]string{"admin"}, append(args, "--bootstrap-server", bootstrap, "--output", "json")...)
	out, err := exec.Command(brokerBin, args...).CombinedOutput()
	return string(out), err
}

// waitAcks waits until the load has n more acknowledgements than now:
// the producer keeps going through what just happened.
func (l *loadProducer) waitAcks(t testing.TB, n int) {
	t.Helper()
	from := l.acks.Count()
	testutil.Eventually(t, 30*time.Second, func() error {
		if got := l.acks.Count(); got < from+n {
			return fmt.Errorf("%d more acknowledgements", got-from)
		}
		return nil
	}, "%d more acknowledgements of the load", n)
}
