package bench

// kbroker bench --mode scale: how a local three-node cluster (RF 3, so
// every node hosts a replica of every partition) grows with the number
// of partitions. For each count P (--scale-partitions, default 1000 and
// 10000) a fresh cluster is started and measured:
//
//   - creation: CreateTopics of P partitions (topics of scaleTopicSize
//     partitions, scaleTopicsPerRequest topics per request) until the
//     Metadata of every broker shows each partition with a leader and
//     all three replicas in the ISR;
//   - idle: with no client, each node's CPU over --idle-window (utime +
//     stime from /proc/<pid>/stat, as % of one core: mostly follower
//     fetchers), its RSS (VmRSS) and its open descriptors (/proc/<pid>/fd),
//     and their growth per hosted replica over the empty cluster; with
//     --profile-dir, then each node's CPU profile over another idle
//     window (admin.pprof.enable is on for those runs, and its mutex and
//     block sampling cost a little CPU of their own);
//   - restart: SIGTERM to all three (time to exit), start all three, time
//     until every /readyz answers and until every partition has a leader
//     and a full ISR again on every broker;
//   - kill -9 of one node, restart, the same two times;
//   - propagation: one more CreateTopics of a 1,000-partition topic, time
//     until the Metadata of all three brokers shows all of it led.
//
// The table gives every figure per count and its ratio to the first
// count's figure.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	// scaleTopicSize is the partitions of each topic of the bench; a count
	// below it is one topic of that size.
	scaleTopicSize = 100
	// scaleTopicsPerRequest topics go in one CreateTopics (1,000
	// partitions), the size of the propagation measurement.
	scaleTopicsPerRequest = 10
	// scalePropagationPartitions is the size of the topic whose
	// propagation to every broker is timed (benchConfig.scaleProp, when
	// set, replaces it).
	scalePropagationPartitions = 1000
)

// scaleResult is one partition count's figures.
type scaleResult struct {
	partitions     int
	createAcked    time.Duration // every CreateTopics answered
	created        time.Duration // every partition led with a full ISR on every broker
	propagation    time.Duration
	propAcked      time.Duration
	propPartitions int
	createRetries  int        // CreateTopics asked again after a transient refusal
	idleCPU        [3]float64 // % of one core
	rssKiB, fds    [3]int64
	baseRSSKiB     [3]int64
	baseFDs        [3]int64
	baseCPU        [3]float64
	stopAll        time.Duration // SIGTERM until all three exited
	restartReady   time.Duration
	restartISR     time.Duration
	killReady      time.Duration
	killISR        time.Duration
	idleWindow     time.Duration
	loadAfterIdle  string
	loadAfterCount string
}

func parseCounts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a positive partition count", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// runScale measures every count in c.scaleCounts, each on a fresh
// cluster under c.dir, and prints the table.
func runScale(ctx context.Context, c benchConfig, bin string, stdout, stderr io.Writer) error {
	if c.scaleProp <= 0 {
		c.scaleProp = scalePropagationPartitions
	}
	var results []scaleResult
	for _, p := range c.scaleCounts {
		dir := filepath.Join(c.dir, fmt.Sprintf("scale-%d", p))
		// Every replica of P partitions plus the propagation topic lands on
		// every node: raise max.broker.partitions past the default 10,000.
		sets := append([]string{fmt.Sprintf("max.broker.partitions=%d", p+2*c.scaleProp)}, c.sets...)
		cl, err := newBenchCluster(bin, dir, sets, c.profileDir != "")
		if err != nil {
			return err
		}
		r, err := measureScale(ctx, c, cl, p, stderr)
		cl.stop()
		if err != nil {
			return fmt.Errorf("%d partitions: %w (node logs in %s)", p, err, dir)
		}
		results = append(results, r)
		if !c.keep {
			if err := os.RemoveAll(dir); err != nil {
				fmt.Fprintf(stderr, "could not remove %s: %v\n", dir, err)
			}
		}
	}
	printScale(stdout, results)
	return nil
}

func measureScale(ctx context.Context, c benchConfig, cl *benchCluster, p int, stderr io.Writer) (scaleResult, error) {
	r := scaleResult{partitions: p, idleWindow: c.idleWindow, propPartitions: c.scaleProp}
	logf := func(format string, args ...any) {
		fmt.Fprintf(stderr, "%s P=%d: %s\n", time.Now().UTC().Format("15:04:05"), p, fmt.Sprintf(format, args...))
	}
	if err := cl.start(ctx); err != nil {
		return r, err
	}
	client, err := kgo.NewClient(kgo.SeedBrokers(cl.seeds()...), kgo.RequestTimeoutOverhead(2*time.Minute))
	if err != nil {
		return r, err
	}
	defer client.Close()

	// The empty cluster: what every replica's share is measured against.
	// Settling pauses are capped by the idle window, so a short run (the
	// test's) stays short.
	settle(ctx, min(3*time.Second, c.idleWindow))
	var err2 error
	r.baseCPU, err2 = idleCPU(ctx, cl, c.idleWindow/3)
	if err2 != nil {
		return r, err2
	}
	for i, n := range cl.nodes {
		if r.baseRSSKiB[i], r.baseFDs[i], err = procUsage(n.pid()); err != nil {
			return r, err
		}
	}
	logf("empty cluster: RSS %v KiB, fds %v, cpu %v%%", r.baseRSSKiB, r.baseFDs, r.baseCPU)

	topics := scaleTopics(p)
	start := time.Now()
	for i := 0; i < len(topics); i += scaleTopicsPerRequest {
		if err := createTopics(ctx, client, topics[i:min(i+scaleTopicsPerRequest, len(topics))], &r.createRetries); err != nil {
			return r, err
		}
	}
	r.createAcked = time.Since(start)
	logf("CreateTopics answered after %v (%d requests retried after a transient refusal)", r.createAcked.Round(time.Millisecond), r.createRetries)
	timeout := time.Minute + time.Duration(p)*50*time.Millisecond
	if err := waitScaleISR(ctx, client, cl, topics, timeout); err != nil {
		return r, fmt.Errorf("after creation: %w", err)
	}
	r.created = time.Since(start)
	logf("all led with full ISR after %v", r.created.Round(time.Millisecond))

	settle(ctx, min(5*time.Second, c.idleWindow))
	if r.idleCPU, err = idleCPU(ctx, cl, c.idleWindow); err != nil {
		return r, err
	}
	for i, n := range cl.nodes {
		if r.rssKiB[i], r.fds[i], err = procUsage(n.pid()); err != nil {
			return r, err
		}
	}
	r.loadAfterIdle = loadAverage()
	logf("idle: cpu %v%%, RSS %v KiB, fds %v, load %s", r.idleCPU, r.rssKiB, r.fds, r.loadAfterIdle)
	if c.profileDir != "" {
		// After the measured window, not during it: a profile costs
		// the nodes CPU of its own.
		dir := filepath.Join(c.profileDir, fmt.Sprintf("idle-%d", p))
		cl.profile(ctx, dir, c.idleWindow, stderr)()
		logf("idle profiles in %s", dir)
	}

	// SIGTERM all three at once, then start them all.
	start = time.Now()
	var wg sync.WaitGroup
	for _, n := range cl.nodes {
		wg.Go(func() { n.terminate(timeout) })
	}
	wg.Wait()
	r.stopAll = time.Since(start)
	logf("SIGTERM: all exited after %v", r.stopAll.Round(time.Millisecond))
	start = time.Now()
	for _, n := range cl.nodes {
		if err := n.start(cl.bin); err != nil {
			return r, err
		}
	}
	for _, n := range cl.nodes {
		if err := n.waitReadyWithin(ctx, timeout); err != nil {
			return r, err
		}
	}
	r.restartReady = time.Since(start)
	if err := waitScaleISR(ctx, client, cl, topics, timeout); err != nil {
		return r, fmt.Errorf("after restart: %w", err)
	}
	r.restartISR = time.Since(start)
	logf("restart: ready after %v, full ISR after %v", r.restartReady.Round(time.Millisecond), r.restartISR.Round(time.Millisecond))

	// kill -9 one node (not the first, whose address clients seed with
	// first), then start it again: an unclean restart of its logs.
	victim := cl.nodes[1]
	victim.kill()
	start = time.Now()
	if err := victim.start(cl.bin); err != nil {
		return r, err
	}
	if err := victim.waitReadyWithin(ctx, timeout); err != nil {
		return r, err
	}
	r.killReady = time.Since(start)
	if err := waitScaleISR(ctx, client, cl, topics, timeout); err != nil {
		return r, fmt.Errorf("after kill -9 of node %d: %w", victim.id, err)
	}
	r.killISR = time.Since(start)
	logf("kill -9 node %d: ready after %v, full ISR after %v", victim.id, r.killReady.Round(time.Millisecond), r.killISR.Round(time.Millisecond))

	prop := []string{"scale-propagation"}
	start = time.Now()
	if err := createTopicsOf(ctx, client, prop, c.scaleProp); err != nil {
		return r, err
	}
	r.propAcked = time.Since(start)
	if err := waitLed(ctx, client, cl, prop[0], c.scaleProp, timeout); err != nil {
		return r, fmt.Errorf("propagation: %w", err)
	}
	r.propagation = time.Since(start)
	r.loadAfterCount = loadAverage()
	logf("propagation of %d partitions: answered after %v, on every broker after %v", c.scaleProp,
		r.propAcked.Round(time.Millisecond), r.propagation.Round(time.Millisecond))
	return r, nil
}

// scaleTopics names the topics holding p partitions: scale-0000, ...
func scaleTopics(p int) []scaleTopic {
	var out []scaleTopic
	for i := 0; p > 0; i++ {
		n := min(p, scaleTopicSize)
		out = append(out, scaleTopic{name: fmt.Sprintf("scale-%04d", i), partitions: n})
		p -= n
	}
	return out
}

type scaleTopic struct {
	name       string
	partitions int
}

func createTopicsOf(ctx context.Context, cl *kgo.Client, names []string, partitions int) error {
	var ts []scaleTopic
	for _, n := range names {
		ts = append(ts, scaleTopic{name: n, partitions: partitions})
	}
	var retries int
	return createTopics(ctx, cl, ts, &retries)
}

// createTopics sends one CreateTopics (RF 3) for topics and checks every
// topic's answer. A topic refused for a reason that passes (a broker
// fenced for a moment, so fewer than three are unfenced; a controller
// moving) is asked for again after a pause, within a minute; retries
// counts those requests.
func createTopics(ctx context.Context, cl *kgo.Client, topics []scaleTopic, retries *int) error {
	deadline := time.Now().Add(time.Minute)
	for {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = 120_000
		for _, t := range topics {
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = t.name, int32(t.partitions), 3
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return fmt.Errorf("CreateTopics: %w", err)
		}
		var again []scaleTopic
		var last error
		for i, t := range resp.Topics {
			err := kerr.ErrorForCode(t.ErrorCode)
			switch {
			case err == nil, errors.Is(err, kerr.TopicAlreadyExists):
				continue
			case errors.Is(err, kerr.InvalidReplicationFactor), errors.Is(err, kerr.NotController),
				errors.Is(err, kerr.RequestTimedOut), errors.Is(err, kerr.BrokerNotAvailable):
				if i < len(topics) {
					again = append(again, topics[i])
				}
			default:
				msg := ""
				if t.ErrorMessage != nil {
					msg = ": " + *t.ErrorMessage
				}
				return fmt.Errorf("CreateTopics %s: %w%s", t.Topic, err, msg)
			}
			last = fmt.Errorf("CreateTopics %s: %w", t.Topic, err)
		}
		if len(again) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return last
		}
		*retries++
		topics = again
		settle(ctx, 500*time.Millisecond)
	}
}

// brokerMetadata asks broker id (not any broker: each one's own view is
// what is measured) for the metadata of topics (nil: all).
func brokerMetadata(ctx context.Context, cl *kgo.Client, id int32, topics []string) (*kmsg.MetadataResponse, error) {
	req := kmsg.NewPtrMetadataRequest() // Topics nil: all of them
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return req.RequestWith(rctx, cl.Broker(int(id)))
}

// waitScaleISR polls every broker's Metadata until each partition of
// topics has a leader and three replicas in its ISR.
func waitScaleISR(ctx context.Context, cl *kgo.Client, bc *benchCluster, topics []scaleTopic, timeout time.Duration) error {
	want := map[string]int{}
	for _, t := range topics {
		want[t.name] = t.partitions
	}
	return pollBrokers(ctx, cl, bc, nil, timeout, func(resp *kmsg.MetadataResponse) string {
		return missing(resp, want, true)
	})
}

// waitLed polls every broker's Metadata for topic until it shows all of
// its partitions with a leader.
func waitLed(ctx context.Context, cl *kgo.Client, bc *benchCluster, topic string, partitions int, timeout time.Duration) error {
	want := map[string]int{topic: partitions}
	return pollBrokers(ctx, cl, bc, []string{topic}, timeout, func(resp *kmsg.MetadataResponse) string {
		return missing(resp, want, false)
	})
}

// missing describes what resp lacks of want (topic → partitions), or is
// "" when every partition is there with a leader (and, if fullISR, an
// ISR of three).
func missing(resp *kmsg.MetadataResponse, want map[string]int, fullISR bool) string {
	seen := map[string]bool{}
	for _, t := range resp.Topics {
		if t.Topic == nil {
			continue
		}
		n, ok := want[*t.Topic]
		if !ok {
			continue
		}
		if t.ErrorCode != 0 {
			return fmt.Sprintf("%s: %v", *t.Topic, kerr.ErrorForCode(t.ErrorCode))
		}
		if len(t.Partitions) != n {
			return fmt.Sprintf("%s: %d of %d partitions", *t.Topic, len(t.Partitions), n)
		}
		for _, p := range t.Partitions {
			if p.Leader < 0 || p.ErrorCode != 0 && !errors.Is(kerr.ErrorForCode(p.ErrorCode), kerr.ReplicaNotAvailable) {
				return fmt.Sprintf("%s-%d: leader %d, %v", *t.Topic, p.Partition, p.Leader, kerr.ErrorForCode(p.ErrorCode))
			}
			if fullISR && len(p.ISR) < 3 {
				return fmt.Sprintf("%s-%d: ISR %v", *t.Topic, p.Partition, p.ISR)
			}
		}
		seen[*t.Topic] = true
	}
	if len(seen) < len(want) {
		return fmt.Sprintf("%d of %d topics", len(seen), len(want))
	}
	return ""
}

// pollBrokers asks each broker in turn until lacking(its answer) is ""
// for all three.
func pollBrokers(ctx context.Context, cl *kgo.Client, bc *benchCluster, topics []string, timeout time.Duration, lacking func(*kmsg.MetadataResponse) string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := make([]bool, len(bc.nodes))
	last := ""
	for {
		all := true
		for i, n := range bc.nodes {
			if done[i] {
				continue
			}
			resp, err := brokerMetadata(ctx, cl, n.id, topics)
			switch {
			case err != nil:
				last = fmt.Sprintf("broker %d: %v", n.id, err)
			default:
				last = lacking(resp)
				if last != "" {
					last = fmt.Sprintf("broker %d: %s", n.id, last)
				}
			}
			done[i] = err == nil && last == ""
			all = all && done[i]
		}
		if all {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: still %s", ctx.Err(), last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// idleCPU is each node's CPU use over window, in % of one core.
func idleCPU(ctx context.Context, cl *benchCluster, window time.Duration) ([3]float64, error) {
	var out [3]float64
	var before [3]time.Duration
	for i, n := range cl.nodes {
		t, err := procCPU(n.pid())
		if err != nil {
			return out, err
		}
		before[i] = t
	}
	start := time.Now()
	settle(ctx, window)
	if err := ctx.Err(); err != nil {
		return out, err
	}
	elapsed := time.Since(start).Seconds()
	for i, n := range cl.nodes {
		t, err := procCPU(n.pid())
		if err != nil {
			return out, err
		}
		out[i] = (t - before[i]).Seconds() / elapsed * 100
	}
	return out, nil
}

// procUsage is pid's resident set (KiB) and open descriptors.
func procUsage(pid int) (rssKiB, fds int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("reading memory use: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			rssKiB, _ = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("counting descriptors: %w", err)
	}
	return rssKiB, int64(len(ents)), nil
}

func settle(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func mean3[T int64 | float64](v [3]T) float64 {
	return (float64(v[0]) + float64(v[1]) + float64(v[2])) / 3
}

func maxOf3[T int64 | float64](v [3]T) float64 {
	return float64(slices.Max(v[:]))
}

// printScale prints one row per figure, one column per count and the
// ratio of each count's figure to the first count's.
func printScale(w io.Writer, rs []scaleResult) {
	if len(rs) == 0 {
		return
	}
	type row struct {
		label string
		unit  string
		value func(scaleResult) float64
	}
	secs := func(d time.Duration) float64 { return d.Seconds() }
	rows := []row{
		{"create: CreateTopics answered", "s", func(r scaleResult) float64 { return secs(r.createAcked) }},
		{"create: led, full ISR on every broker", "s", func(r scaleResult) float64 { return secs(r.created) }},
		{fmt.Sprintf("propagate %d-partition CreateTopics", rs[0].propPartitions), "s", func(r scaleResult) float64 { return secs(r.propagation) }},
		{"idle CPU per node, mean", "% core", func(r scaleResult) float64 { return mean3(r.idleCPU) }},
		{"idle CPU per node, max", "% core", func(r scaleResult) float64 { return maxOf3(r.idleCPU) }},
		{"RSS per node, mean", "MiB", func(r scaleResult) float64 { return mean3(r.rssKiB) / 1024 }},
		{"RSS per replica over empty node", "KiB", func(r scaleResult) float64 {
			return (mean3(r.rssKiB) - mean3(r.baseRSSKiB)) / float64(r.partitions)
		}},
		{"open fds per node, mean", "", func(r scaleResult) float64 { return mean3(r.fds) }},
		{"open fds per replica over empty node", "", func(r scaleResult) float64 {
			return (mean3(r.fds) - mean3(r.baseFDs)) / float64(r.partitions)
		}},
		{"SIGTERM all three: exited", "s", func(r scaleResult) float64 { return secs(r.stopAll) }},
		{"restart all three: /readyz", "s", func(r scaleResult) float64 { return secs(r.restartReady) }},
		{"restart all three: led, full ISR", "s", func(r scaleResult) float64 { return secs(r.restartISR) }},
		{"kill -9 one, restart: /readyz", "s", func(r scaleResult) float64 { return secs(r.killReady) }},
		{"kill -9 one, restart: full ISR", "s", func(r scaleResult) float64 { return secs(r.killISR) }},
	}
	fmt.Fprintf(w, "\nscale: RF 3 on 3 nodes (every node hosts every partition), topics of %d partitions, idle window %v\n",
		scaleTopicSize, rs[0].idleWindow)
	fmt.Fprintf(w, "%-42s %-7s", "", "unit")
	for _, r := range rs {
		fmt.Fprintf(w, " %12s", fmt.Sprintf("P=%d", r.partitions))
	}
	for _, r := range rs[1:] {
		fmt.Fprintf(w, " %10s", fmt.Sprintf("%d/%d", r.partitions, rs[0].partitions))
	}
	fmt.Fprintln(w)
	for _, rw := range rows {
		fmt.Fprintf(w, "%-42s %-7s", rw.label, rw.unit)
		for _, r := range rs {
			fmt.Fprintf(w, " %12.3f", rw.value(r))
		}
		base := rw.value(rs[0])
		for _, r := range rs[1:] {
			fmt.Fprintf(w, " %10.2f", ratio(rw.value(r), base))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "empty cluster per node: RSS %.1f MiB, %.0f fds, idle CPU %.2f%% core (P=%d run)\n",
		mean3(rs[0].baseRSSKiB)/1024, mean3(rs[0].baseFDs), mean3(rs[0].baseCPU), rs[0].partitions)
	for _, r := range rs {
		if r.createRetries > 0 {
			fmt.Fprintf(w, "P=%d: %d CreateTopics requests were refused for a moment (a broker fenced or the controller moving under load) and asked again; the creation time includes the waits\n",
				r.partitions, r.createRetries)
		}
	}
	for _, r := range rs {
		fmt.Fprintf(w, "load average P=%d: after the idle window %s, at the end %s\n", r.partitions, r.loadAfterIdle, r.loadAfterCount)
	}
}

// pid is the node's process id, 0 if it is not running.
func (n *benchNode) pid() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil || n.cmd.Process == nil {
		return 0
	}
	return n.cmd.Process.Pid
}
