package itest

import (
	"context"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testutil"
)

// produceValues writes values to topic with franz-go defaults (acks=all,
// idempotent) through any of addrs, uncompressed so that every client can
// read them (Debian's kafka-python has no snappy), spread round-robin over
// the partitions.
func produceValues(t testing.TB, addrs []string, topic string, values []string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	recs := make([]*kgo.Record, len(values))
	for i, v := range values {
		recs[i] = &kgo.Record{Topic: topic, Value: []byte(v)}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

func numberedValues(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%06d", prefix, i)
	}
	return out
}

// groupCoordinator asks addr which broker coordinates group.
func groupCoordinator(t testing.TB, addr, group string) int32 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	coordinator := int32(-1)
	testutil.Eventually(t, 10*time.Second, func() error {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey = group
		req.CoordinatorKeys = []string{group}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		if len(resp.Coordinators) != 1 || resp.Coordinators[0].ErrorCode != 0 {
			return fmt.Errorf("FindCoordinator answered %+v", resp.Coordinators)
		}
		coordinator = resp.Coordinators[0].NodeID
		return nil
	}, "coordinator of group %s", group)
	return coordinator
}

// committed returns the group's committed offsets per partition.
func committed(t testing.TB, addrs []string, group, topic string) map[int32]int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	offs, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("fetch offsets of %s: %v", group, err)
	}
	out := map[int32]int64{}
	for p, o := range offs[topic] {
		out[p] = o.At
	}
	return out
}

// A group consumes a replicated topic while its coordinator's broker is
// killed: the group re-forms on the new coordinator and resumes from the
// committed offsets; no committed offset goes backwards.
func TestGroupSurvivesCoordinatorKill(t *testing.T) {
	c := startCluster(t, 3)
	addrs := []string{c.node(1).addr, c.node(2).addr, c.node(3).addr}
	topic, group := topicName(t), "survivor"
	createTopicOn(t, addrs[0], topic, 6, 3)
	c.waitConverged(30*time.Second, "topic led", allLed(topic, aliveIDs(c)))
	values := numberedValues("g", pick(1500, 4000))
	produceValues(t, addrs, topic, values)

	coord := groupCoordinator(t, addrs[0], group)
	var mu sync.Mutex
	seen := map[string]int{}
	lastCommitted := map[int32]int64{}
	var lastCommitAt time.Time
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
		kgo.FetchMaxBytes(64<<10), kgo.FetchMaxPartitionBytes(8<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	killed := false
	var killAt, resumedAt time.Time
	for attempt := 0; len(seen) < len(values) && attempt < 100000; attempt++ {
		fs := cl.PollRecords(ctx, 200)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d distinct values before timeout", len(seen), len(values))
		}
		recs := fs.Records()
		for _, r := range recs {
			seen[string(r.Value)]++
		}
		if len(recs) == 0 {
			continue
		}
		if err := cl.CommitRecords(ctx, recs...); err != nil {
			t.Logf("commit failed (retried by the next poll): %v", err)
			continue
		}
		mu.Lock()
		for _, r := range recs {
			if r.Offset+1 > lastCommitted[r.Partition] {
				lastCommitted[r.Partition] = r.Offset + 1
			}
		}
		lastCommitAt = time.Now()
		if killed && resumedAt.IsZero() {
			resumedAt = lastCommitAt
		}
		mu.Unlock()
		if !killed && len(seen) > len(values)/3 {
			killed, killAt = true, time.Now()
			t.Logf("killing coordinator %d after %d values", coord, len(seen))
			c.node(coord).kill9()
		}
	}
	if !killed || resumedAt.IsZero() {
		t.Fatalf("never resumed after the kill (killed %v)", killed)
	}
	t.Logf("coordinator kill to the next successful commit: %v", resumedAt.Sub(killAt).Round(time.Millisecond))
	for _, v := range values {
		if seen[v] == 0 {
			t.Fatalf("value %s never consumed", v)
		}
	}
	survivors := []string{}
	for _, b := range c.alive() {
		survivors = append(survivors, b.addr)
	}
	got := committed(t, survivors, group, topic)
	for p, want := range lastCommitted {
		if got[p] < want {
			t.Fatalf("partition %d: committed offset %d after failover, but %d was acknowledged", p, got[p], want)
		}
	}
}

// kcat's balanced consumer (-G) forms a group and commits.
func TestKcatGroupConsumers(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat not installed (apt-get install kcat)")
	}
	b := startBroker(t, t.TempDir(), "group.initial.rebalance.delay.ms=0")
	topic := topicName(t)
	createTopic(t, b, topic, 4, nil)
	values := numberedValues("k", 400)
	produceValues(t, []string{b.addr}, topic, values)

	// Two balanced consumers in one group; each exits at the end of its
	// partitions. Together they must read every value.
	var wg sync.WaitGroup
	outs := make([]string, 2)
	errs := make([]error, 2)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, stderr, err := runCmdErr(60*time.Second, "", kcat, "-b", b.addr, "-G", "kcat-group",
				"-X", "auto.offset.reset=earliest", "-e", "-q", "-f", "%s\n", topic)
			outs[i], errs[i] = out, err
			if err != nil {
				errs[i] = fmt.Errorf("%w: %s", err, tail(stderr, 800))
			}
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for i, out := range outs {
		if errs[i] != nil {
			t.Fatalf("kcat %d: %v", i, errs[i])
		}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if line != "" {
				seen[line] = true
			}
		}
	}
	for _, v := range values {
		if !seen[v] {
			t.Fatalf("value %s not consumed by the kcat group (%d of %d seen)", v, len(seen), len(values))
		}
	}
	// kcat commits what it consumed (auto commit): the group's offsets
	// cover the whole topic.
	waitCommitted(t, b, "kcat-group", topic, int64(len(values)))
}

// kafka-python's group consumer subscribes, reads and commits.
func TestKafkaPythonGroupConsumer(t *testing.T) {
	requirePython(t, "kafka")
	b := startBroker(t, t.TempDir(), "group.initial.rebalance.delay.ms=0")
	topic := topicName(t)
	createTopic(t, b, topic, 3, nil)
	values := numberedValues("py", 300)
	produceValues(t, []string{b.addr}, topic, values)
	script := `
import json, sys
from kafka import KafkaConsumer
addr, topic, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
c = KafkaConsumer(topic, bootstrap_servers=addr, group_id="py-group", auto_offset_reset="earliest",
                  enable_auto_commit=False, consumer_timeout_ms=20000)
out = []
for m in c:
    out.append([m.partition, m.offset, m.value.decode()])
    if len(out) >= n:
        break
c.commit()
c.close()
print(json.dumps({"acked": [], "consumed": out, "errors": [], "info": ""}))
`
	res := runPython(t, script, b.addr, topic, fmt.Sprint(len(values)))
	got := res.records(t, res.Consumed)
	var vals []string
	for _, r := range got {
		vals = append(vals, r.Value)
	}
	sort.Strings(vals)
	if strings.Join(vals, ",") != strings.Join(values, ",") {
		t.Fatalf("kafka-python group consumed %d values, want the %d produced", len(vals), len(values))
	}
	offs := committed(t, []string{b.addr}, "py-group", topic)
	total := int64(0)
	for _, o := range offs {
		total += o
	}
	if total != int64(len(values)) {
		t.Fatalf("kafka-python committed %v, total %d, want %d", offs, total, len(values))
	}
}

// Three franz-go group consumers share a replicated 6-partition topic on
// a 3-node cluster; one leaves and the others take over its partitions;
// with commits, every record is consumed exactly once.
func TestGroupSharesAndRebalancesOnThreeNodes(t *testing.T) {
	c := startCluster(t, 3, "group.initial.rebalance.delay.ms=200")
	addrs := []string{c.node(1).addr, c.node(2).addr, c.node(3).addr}
	topic, group := topicName(t), "sharing"
	createTopicOn(t, addrs[0], topic, 6, 3)
	c.waitConverged(30*time.Second, "topic led", allLed(topic, aliveIDs(c)))
	first := numberedValues("a", 600)
	produceValues(t, addrs, topic, first)

	var mu sync.Mutex
	seen := map[string]int{}
	byMember := map[int]map[int32]bool{}
	type member struct {
		cl   *kgo.Client
		done chan struct{}
	}
	start := func(i int) *member {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
		if err != nil {
			t.Fatal(err)
		}
		m := &member{cl: cl, done: make(chan struct{})}
		go func() {
			defer close(m.done)
			for attempt := 0; attempt < 100000; attempt++ {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				fs := cl.PollFetches(ctx)
				cancel()
				if fs.IsClientClosed() {
					return
				}
				recs := fs.Records()
				if len(recs) == 0 {
					continue
				}
				mu.Lock()
				for _, r := range recs {
					seen[string(r.Value)]++
					if byMember[i] == nil {
						byMember[i] = map[int32]bool{}
					}
					byMember[i][r.Partition] = true
				}
				mu.Unlock()
				cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
				if err := cl.CommitRecords(cctx, recs...); err != nil {
					t.Logf("member %d commit: %v", i, err)
				}
				ccancel()
			}
		}()
		return m
	}
	members := []*member{start(0), start(1), start(2)}
	defer func() {
		for _, m := range members {
			m.cl.Close()
			<-m.done
		}
	}()
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(seen)
	}
	consumed := func(n int) func() error {
		return func() error {
			if c := count(); c < n {
				return fmt.Errorf("%d of %d consumed", c, n)
			}
			return nil
		}
	}
	testutil.Eventually(t, 60*time.Second, consumed(len(first)), "the group consuming the first records")

	left := time.Now()
	members[2].cl.Close() // leaves the group
	<-members[2].done
	members = members[:2]
	mu.Lock()
	byMember = map[int]map[int32]bool{}
	mu.Unlock()
	second := numberedValues("b", 600)
	produceValues(t, addrs, topic, second)
	testutil.Eventually(t, 60*time.Second, consumed(len(first)+len(second)), "the two remaining members consuming the next records")
	t.Logf("member left to all of the next 600 records consumed: %v", time.Since(left).Round(time.Millisecond))
	mu.Lock()
	defer mu.Unlock()
	for _, v := range append(first, second...) {
		if seen[v] != 1 {
			t.Errorf("value %s consumed %d times, want exactly once", v, seen[v])
		}
	}
	covered := map[int32]bool{}
	for i, ps := range byMember {
		if i == 2 {
			t.Errorf("the departed member read partitions %v", ps)
		}
		for p := range ps {
			covered[p] = true
		}
	}
	if len(covered) != 6 {
		t.Errorf("after the leave the two members read partitions %v, want all 6", covered)
	}
}
