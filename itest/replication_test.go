package itest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/clustercheck"
)

// keepLogs copies the brokers' logs to $KB_KEEP_LOGS/<test>/ at the end of
// a failed test (before the temporary directories go).
func keepLogs(t testing.TB, c *testCluster) {
	dir := os.Getenv("KB_KEEP_LOGS")
	if dir == "" {
		return
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		out := filepath.Join(dir, nonTopicChars.ReplaceAllString(t.Name(), "-"))
		_ = os.MkdirAll(out, 0o755)
		for i, b := range c.brokers {
			if data, err := os.ReadFile(b.logPath); err == nil {
				_ = os.WriteFile(filepath.Join(out, fmt.Sprintf("node-%d.log", i+1)), data, 0o644)
			}
		}
		t.Logf("broker logs kept in %s", out)
	})
}

// producerOpts keep an idempotent acks=all producer going across leader
// changes: quick metadata refreshes, bounded waits.
func producerOpts() []kgo.Opt {
	return []kgo.Opt{
		kgo.MetadataMinAge(200 * time.Millisecond),
		kgo.RetryTimeout(30 * time.Second),
		kgo.ProduceRequestTimeout(10 * time.Second),
		kgo.RecordDeliveryTimeout(60 * time.Second),
	}
}

// produceAll produces values to topic with cl (acks=all by default) and
// records every acknowledgement in a; it returns the send errors.
func produceAll(t testing.TB, cl *kgo.Client, topic string, a *acks, values []string, timeout time.Duration) []error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, v := range values {
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}, func(r *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				a.Fail()
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s: %w", v, err))
				mu.Unlock()
				return
			}
			a.Ack(r.Partition, r.Offset, v)
		})
	}
	wg.Wait()
	return errs
}

// TestReplicatedKillLeaderNoAckLost produces continuously with franz-go's
// defaults (idempotent, acks=all) to an RF=3, min.insync.replicas=2 topic
// while it SIGKILLs the leader of partition 0, restarts it, then SIGKILLs
// and restarts another broker. Every acknowledged record must read back at
// its offset, and the three replicas must hold identical bytes below the
// high watermark.
func TestReplicatedKillLeaderNoAckLost(t *testing.T) {
	total := pick(6000, 20000)
	produceFor := time.Duration(pick(10, 20)) * time.Second
	const tick = 10 * time.Millisecond
	perTick := max(1, total/int(produceFor/tick))

	c := startCluster(t, 3, "min.insync.replicas=2")
	keepLogs(t, c)
	topic := topicName(t)
	m := createReplicated(t, c, topic, 3, 3, nil)
	leader0 := partStates(m, topic)[0].Leader
	t.Logf("initial:\n%s", describe(m))

	a := newAcks()
	var clock clustercheck.AckTimes
	var errMu sync.Mutex
	var sampleErrs []string
	cl := clusterClient(t, c, producerOpts()...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	began := time.Now()
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		ticker := time.NewTicker(tick)
		defer ticker.Stop()
		for i := 0; i < total && ctx.Err() == nil; {
			for j := 0; j < perTick && i < total; j, i = j+1, i+1 {
				v := fmt.Sprintf("k-%06d", i)
				cl.Produce(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}, func(r *kgo.Record, err error) {
					if err != nil {
						a.Fail()
						errMu.Lock()
						if len(sampleErrs) < 5 {
							sampleErrs = append(sampleErrs, fmt.Sprintf("%s: %v", v, err))
						}
						errMu.Unlock()
						return
					}
					clock.Add(r.Partition, time.Now())
					a.Ack(r.Partition, r.Offset, v)
				})
			}
			select {
			case <-ticker.C:
			case <-ctx.Done():
			}
		}
	}()

	sleepUntil := func(d time.Duration) {
		if w := time.Until(began.Add(d)); w > 0 {
			time.Sleep(w)
		}
	}
	type killEvent struct {
		node  int32
		at    time.Time
		acked int
	}
	var kills []killEvent

	// Kill 1: the leader of partition 0.
	sleepUntil(produceFor / 5)
	v1 := c.node(leader0)
	kills = append(kills, killEvent{leader0, time.Now(), a.Count()})
	v1.kill9()
	time.Sleep(3 * time.Second)
	v1.start()
	c.waitConverged(45*time.Second, "full ISR after restarting node "+fmt.Sprint(leader0), fullISR(c, topic, 3, 3))

	// Kill 2: another broker, preferably one leading a partition now.
	sleepUntil(produceFor * 11 / 20)
	m = c.waitConverged(30*time.Second, "leaders before the second kill", allLed(topic, aliveIDs(c)))
	second := int32(0)
	for p := int32(0); p < 3 && second == 0; p++ {
		if l := partStates(m, topic)[p].Leader; l != leader0 {
			second = l
		}
	}
	if second == 0 {
		second = leader0%3 + 1
	}
	v2 := c.node(second)
	kills = append(kills, killEvent{second, time.Now(), a.Count()})
	v2.kill9()
	time.Sleep(3 * time.Second)
	v2.start()

	select {
	case <-produced:
	case <-ctx.Done():
		t.Fatalf("producer did not hand over %d records in time", total)
	}
	fctx, fcancel := context.WithTimeout(ctx, 90*time.Second)
	err := cl.Flush(fctx)
	fcancel()
	end := time.Now()
	if err != nil {
		t.Errorf("flush: %v (%d acknowledged, %d failed)", err, a.Count(), a.Failed())
	}
	m = c.waitConverged(60*time.Second, "full ISR after the run", fullISR(c, topic, 3, 3))
	t.Logf("final:\n%s", describe(m))

	var faults []clustercheck.Fault
	for i, k := range kills {
		faults = append(faults, clustercheck.Fault{Kind: fmt.Sprintf("kill %d (node %d, %d acknowledged before)", i+1, k.node, k.acked), Start: k.at})
	}
	gaps := clustercheck.LongestGaps(clock.Snapshot(), faults, end)
	for _, f := range faults {
		g := gaps[f.Kind]
		t.Logf("%s: longest gap between a partition's acknowledgements %v (p%d)", f.Kind, g.Duration().Round(time.Millisecond), g.Partition)
	}
	failed := a.Failed()
	errMu.Lock()
	t.Logf("%d records handed over in %v, %d acknowledged, %d failed sends (samples: %v)",
		total, end.Sub(began).Round(time.Millisecond), a.Count(), failed, sampleErrs)
	errMu.Unlock()

	got := consumeAll(t, c.alive()[0], topic)
	checkLogOnce(t, a, got)
	if failed == 0 && a.Count() != total {
		t.Errorf("%d acknowledged with no failures, want %d", a.Count(), total)
	}

	// The three replicas agree byte for byte below the high watermark.
	hws := endOffsets(t, c.alive()[0], topic)
	compareReplicaLogs(t, c, topic, hws)
}

// TestNotEnoughReplicas stops two of three brokers cleanly; once the
// survivor leads every partition with an ISR of one, an acks=-1 produce
// is refused with NOT_ENOUGH_REPLICAS before anything is written, while
// acks=1 still works. The stopped brokers come back, rejoin the ISR, and
// acks=all works again.
func TestNotEnoughReplicas(t *testing.T) {
	c := startCluster(t, 3, "min.insync.replicas=2", "replica.lag.time.max.ms=3000")
	keepLogs(t, c)
	topic := topicName(t)
	m := createReplicated(t, c, topic, 3, 3, nil)
	survivor := partStates(m, topic)[0].Leader

	a := newAcks()
	cl := clusterClient(t, c, producerOpts()...)
	var vals []string
	for i := range 300 {
		vals = append(vals, fmt.Sprintf("before-%04d", i))
	}
	if errs := produceAll(t, cl, topic, a, vals, 60*time.Second); len(errs) > 0 {
		t.Fatalf("%d acks=all sends failed with a full ISR, first: %v", len(errs), errs[0])
	}
	cl.Close()

	var stopped []*broker
	for id := int32(1); id <= 3; id++ {
		if id != survivor {
			c.node(id).stop()
			stopped = append(stopped, c.node(id))
		}
	}
	start := time.Now()
	m = c.waitConverged(30*time.Second, fmt.Sprintf("node %d leading everything with ISR [%d]", survivor, survivor),
		allLedBy(topic, 3, survivor, []int32{survivor}))
	t.Logf("ISR shrank to the survivor %v after the second stop:\n%s", time.Since(start).Round(time.Millisecond), describe(m))

	sb := c.node(survivor)
	before := endOffsets(t, sb, topic)
	for p := int32(0); p < 3; p++ {
		code, _ := rawProduce(t, sb.addr, topic, p, -1, []string{"refused-a", "refused-b"})
		if code != kerr.NotEnoughReplicas.Code {
			t.Errorf("p%d acks=-1 with ISR 1 < min.insync.replicas 2: error %d (%v), want %d NOT_ENOUGH_REPLICAS",
				p, code, kerr.ErrorForCode(code), kerr.NotEnoughReplicas.Code)
		}
	}
	after := endOffsets(t, sb, topic)
	for p := int32(0); p < 3; p++ {
		if after[p] != before[p] {
			t.Errorf("p%d: end offset moved from %d to %d after a refused acks=-1 produce", p, before[p], after[p])
		}
	}

	// acks=1 is not subject to min.insync.replicas.
	one := []string{"one-0", "one-1", "one-2", "one-3", "one-4"}
	code, base := rawProduce(t, sb.addr, topic, 0, 1, one)
	if code != 0 {
		t.Fatalf("acks=1 produce with ISR 1: error %d (%v)", code, kerr.ErrorForCode(code))
	}
	if base != before[0] {
		t.Errorf("acks=1 produce: base offset %d, want the previous end %d", base, before[0])
	}
	for i, v := range one {
		a.Ack(0, base+int64(i), v)
	}
	// Strict min ISR (KIP-966): with the ISR below min.insync.replicas the
	// high watermark stays put, so the acks=1 records are accepted but not
	// yet visible; they become visible once the ISR is back.
	if e := endOffsets(t, sb, topic)[0]; e != base {
		t.Errorf("p0 high watermark %d after an acks=1 produce with ISR 1 < min.insync.replicas 2, want it held at %d", e, base)
	}

	// Bring the others back: they catch up and rejoin the ISR.
	start = time.Now()
	for _, b := range stopped {
		b.start()
	}
	c.waitConverged(60*time.Second, "ISR of 3 after restarting the stopped brokers", fullISR(c, topic, 3, 3))
	t.Logf("restart to ISR of 3 on every partition: %v", time.Since(start).Round(time.Millisecond))

	cl = clusterClient(t, c, producerOpts()...)
	vals = vals[:0]
	for i := range 300 {
		vals = append(vals, fmt.Sprintf("after-%04d", i))
	}
	if errs := produceAll(t, cl, topic, a, vals, 60*time.Second); len(errs) > 0 {
		t.Errorf("%d acks=all sends failed after the ISR recovered, first: %v", len(errs), errs[0])
	}
	got := consumeAll(t, c.node(survivor), topic)
	checkLogOnce(t, a, got)
	for _, rs := range got {
		for _, r := range rs {
			if r.Value == "refused-a" || r.Value == "refused-b" {
				t.Errorf("record refused with NOT_ENOUGH_REPLICAS was written: p%d@%d %q", r.Partition, r.Offset, r.Value)
			}
		}
	}
	if a.Count() != 605 {
		t.Errorf("%d acknowledged, want 605", a.Count())
	}
	compareReplicaLogs(t, c, topic, endOffsets(t, c.node(survivor), topic))
}

// TestFollowerCatchUpAfterRestart SIGKILLs a follower, produces acks=all
// while it is down, restarts it and waits until it is back in every ISR,
// then SIGKILLs the other two. The restarted follower, the only ISR
// member left alive, must become the leader and serve every record.
func TestFollowerCatchUpAfterRestart(t *testing.T) {
	n := pick(2000, 5000)
	c := startCluster(t, 3, "min.insync.replicas=2", "replica.lag.time.max.ms=3000")
	keepLogs(t, c)
	topic := topicName(t)
	m := createReplicated(t, c, topic, 3, 3, nil)
	leader0 := partStates(m, topic)[0].Leader
	f := leader0%3 + 1 // a follower of partition 0
	var others []int32
	for id := int32(1); id <= 3; id++ {
		if id != f {
			others = append(others, id)
		}
	}

	c.node(f).kill9()
	c.waitConverged(30*time.Second, fmt.Sprintf("node %d out of every ISR", f), fullISR(c, topic, 3, 2))

	a := newAcks()
	cl := clusterClient(t, c, producerOpts()...)
	var vals []string
	for i := range n {
		vals = append(vals, fmt.Sprintf("c-%06d", i))
	}
	start := time.Now()
	errs := produceAll(t, cl, topic, a, vals, 90*time.Second)
	if len(errs) > 0 {
		t.Errorf("%d of %d acks=all sends failed with ISR 2 = min.insync.replicas, first: %v", len(errs), n, errs[0])
	}
	t.Logf("%d records acknowledged in %v with node %d down", a.Count(), time.Since(start).Round(time.Millisecond), f)
	cl.Close()
	hwsBefore := endOffsets(t, c.node(leader0), topic)

	start = time.Now()
	c.node(f).start()
	m = c.waitConverged(60*time.Second, fmt.Sprintf("node %d back in every ISR", f), fullISR(c, topic, 3, 3))
	t.Logf("node %d restart to ISR of 3: %v\n%s", f, time.Since(start).Round(time.Millisecond), describe(m))

	// Kill the first other; leadership moves within {f, second}.
	c.node(others[0]).kill9()
	c.waitConverged(30*time.Second, fmt.Sprintf("leaders and ISR without node %d", others[0]), fullISR(c, topic, 3, 2))
	// Kill the second: f is the only live ISR member, and alone it has no
	// controller quorum. Restart the first victim, which is out of every
	// ISR, so that a quorum fences the second and elects f everywhere.
	c.node(others[1]).kill9()
	c.node(others[0]).start()
	// Node others[0] rejoins the ISR only by catching up from f, after
	// which the preferred-leader check may hand it leadership back.
	m = c.waitConverged(60*time.Second, fmt.Sprintf("node %d fenced, node %d in every ISR", others[1], f), func(m *kmsg.MetadataResponse) bool {
		alive := aliveIDs(c)
		ps := partStates(m, topic)
		if len(ps) != 3 {
			return false
		}
		for _, p := range ps {
			if p.ErrorCode != 0 || !alive[p.Leader] || slices.Contains(p.ISR, others[1]) || !slices.Contains(p.ISR, f) {
				return false
			}
		}
		return true
	})
	t.Logf("after killing %d and %d and restarting %d:\n%s", others[0], others[1], others[0], describe(m))

	ends := endOffsets(t, c.node(f), topic)
	for p, hw := range hwsBefore {
		if ends[p] < hw {
			t.Errorf("p%d: node %d's high watermark %d is below the %d acknowledged before", p, f, ends[p], hw)
		}
	}
	got := consumeAll(t, c.node(f), topic)
	checkLogOnce(t, a, got)
	if a.Count() != n {
		t.Errorf("%d acknowledged, want %d", a.Count(), n)
	}
	// Which broker served the reads: leadership may move to a restarted
	// replica only after it caught up from f.
	m2, err := metadataFrom(t, c.node(f).addr)
	if err == nil {
		var ls []string
		ps := partStates(m2, topic)
		keys := make([]int, 0, len(ps))
		for p := range ps {
			keys = append(keys, int(p))
		}
		sort.Ints(keys)
		for _, p := range keys {
			ls = append(ls, fmt.Sprintf("p%d leader %d isr %v", p, ps[int32(p)].Leader, ps[int32(p)].ISR))
		}
		t.Logf("after reading: %v", ls)
	}
}
