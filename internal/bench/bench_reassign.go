package bench

// kbroker bench --mode reassign: the throughput of a partition
// reassignment onto a new broker with and without a replication
// throttle. A topic on the three nodes is preloaded with incompressible
// data, a fourth (broker-only) node joins, and one replica of half the
// partitions is moved onto it with no throttle, then one replica of the
// other half with the throttle set as Kafka's kafka-reassign-partitions.sh
// --throttle sets it: leader/follower.replication.throttled.rate
// (cluster-wide dynamic broker configs) and the topic's
// leader.replication.throttled.replicas (the moving partitions' current
// replicas) and follower.replication.throttled.replicas (the replicas
// being added). A light paced acks=all producer writes to the topic
// throughout; its latency is reported per move. The throttle configs are
// removed afterwards, as --verify does once a reassignment is done.

import (
	"context"
	crand "crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	reassignTopic = "bench-reassign"
	// reassignPreloadRecord is the value size of the preload (random
	// bytes: nothing for a codec to shrink).
	reassignPreloadRecord = 8 << 10
	// reassignMoveTimeout bounds one move.
	reassignMoveTimeout = 30 * time.Minute
)

// reassignBenchConfig holds the flags of --mode reassign.
type reassignBenchConfig struct {
	preloadMB  int
	throttleMB float64
	loadRate   float64
	baseline   time.Duration
}

func addReassignBenchFlags(fs *flag.FlagSet, c *reassignBenchConfig) {
	fs.IntVar(&c.preloadMB, "preload-mb", 300, "reassign: MB (MiB) of random data preloaded into the topic; each of the two moves copies half of it onto the new broker")
	fs.Float64Var(&c.throttleMB, "throttle-mb", 10, "reassign: the throttle of the second move in MB/s (leader and follower.replication.throttled.rate)")
	fs.Float64Var(&c.loadRate, "load-rate", 500, "reassign: records/s of the acks=all producer running during the moves (--record-size bytes each)")
	fs.DurationVar(&c.baseline, "baseline", 3*time.Second, "reassign: how long the producer's latency is measured before the first move")
}

func (c reassignBenchConfig) validate(partitions int) error {
	switch {
	case c.preloadMB <= 0:
		return flagErr("preload-mb", "must be positive")
	case c.throttleMB <= 0:
		return flagErr("throttle-mb", "must be positive")
	case c.loadRate <= 0:
		return flagErr("load-rate", "must be positive")
	case c.baseline <= 0:
		return flagErr("baseline", "must be positive")
	case partitions < 2:
		return flagErr("partitions", "reassign: at least 2 (half are moved unthrottled, half throttled)")
	}
	return nil
}

// moveResult is one move: what was copied onto the new broker, how long
// it took, and the producer's latency meanwhile.
type moveResult struct {
	name       string
	partitions []int32
	bytes      int64
	elapsed    time.Duration
	lat        latencyWindow
}

func (m moveResult) mbps() float64 { return rate(float64(m.bytes)/mib, m.elapsed.Seconds()) }

// latencyWindow is the producer's acknowledgements of records handed over
// during one window.
type latencyWindow struct {
	acked, failed int64
	firstErr      error
	p50, p99      time.Duration
}

// phasedLoad is a paced acks=all producer whose latencies are collected
// per window: a record counts in the window current when it was handed
// over.
type phasedLoad struct {
	cl   *kgo.Client
	mu   sync.Mutex
	cur  *loadWindow
	stop context.CancelFunc
	done chan struct{}
}

type loadWindow struct {
	res  latencyWindow
	sent int64
	lat  reservoir
}

func startPhasedLoad(ctx context.Context, seeds []string, topic string, partitions int, recordSize int, recsPerSec float64) (*phasedLoad, error) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(seeds...),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerLinger(0),
	)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	l := &phasedLoad{cl: cl, cur: &loadWindow{lat: reservoir{max: 1_000_000}}, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		value := payload(recordSize)
		start := time.Now()
		for n := int64(0); ctx.Err() == nil; n++ {
			if ahead := time.Duration(float64(n)/recsPerSec*float64(time.Second)) - time.Since(start); ahead > 0 {
				if sleepCtx(ctx, ahead) != nil {
					return
				}
			}
			l.mu.Lock()
			w := l.cur
			w.sent++
			l.mu.Unlock()
			t0 := time.Now()
			r := &kgo.Record{Partition: int32(n % int64(partitions)), Value: value}
			cl.Produce(context.Background(), r, func(_ *kgo.Record, err error) {
				d := time.Since(t0)
				l.mu.Lock()
				defer l.mu.Unlock()
				if err != nil {
					w.res.failed++
					if w.res.firstErr == nil {
						w.res.firstErr = err
					}
					return
				}
				w.res.acked++
				w.lat.add(int64(d))
			})
		}
	}()
	return l, nil
}

// next starts a new window and returns the previous one once every record
// handed over in it is acknowledged (or failed).
func (l *phasedLoad) next(ctx context.Context) (latencyWindow, error) {
	l.mu.Lock()
	prev := l.cur
	l.cur = &loadWindow{lat: reservoir{max: 1_000_000}}
	l.mu.Unlock()
	// Records of the previous window still in flight are waited for (a
	// Flush would wait for the next window's too, which never stop).
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		l.mu.Lock()
		pending := prev.sent - prev.res.acked - prev.res.failed
		l.mu.Unlock()
		if pending == 0 {
			break
		}
		if err := sleepCtx(ctx, 10*time.Millisecond); err != nil {
			return latencyWindow{}, fmt.Errorf("waiting for %d acknowledgements: %w", pending, err)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	ps := percentiles(prev.lat.values, []float64{0.50, 0.99})
	prev.res.p50, prev.res.p99 = time.Duration(ps[0]), time.Duration(ps[1])
	return prev.res, nil
}

func (l *phasedLoad) close() {
	l.stop()
	<-l.done
	l.cl.Close()
}

func runReassignBench(ctx context.Context, c benchConfig, cl *benchCluster, stdout, stderr io.Writer) error {
	rc := c.reassign
	parts := int32(c.partitions)
	if err := createBenchTopic(ctx, cl.seeds(), reassignTopic, parts, 3, nil); err != nil {
		return err
	}
	admCl, err := kgo.NewClient(kgo.SeedBrokers(cl.seeds()...))
	if err != nil {
		return err
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)

	start := time.Now()
	n, err := preloadRandom(ctx, cl.seeds(), reassignTopic, parts, int64(rc.preloadMB)*mib)
	if err != nil {
		return err
	}
	took := time.Since(start)
	fmt.Fprintf(stdout, "preloaded %d MB (%d records of %d random bytes) into %s (%d partitions, RF 3, min.insync.replicas 2) in %v (%.1f MB/s)\n",
		rc.preloadMB, n, reassignPreloadRecord, reassignTopic, parts, took.Round(time.Millisecond), rate(float64(rc.preloadMB), took.Seconds()))

	start = time.Now()
	four, err := cl.addBrokerOnly(ctx)
	if err != nil {
		return fmt.Errorf("adding broker %d: %w", four.id, err)
	}
	if err := waitBrokers(ctx, adm, len(cl.nodes)); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "broker %d (process.roles=broker) registered after %v\n", four.id, time.Since(start).Round(time.Millisecond))

	load, err := startPhasedLoad(ctx, cl.seeds(), reassignTopic, c.partitions, c.recordSize, rc.loadRate)
	if err != nil {
		return err
	}
	defer load.close()
	if err := sleepCtx(ctx, rc.baseline); err != nil {
		return err
	}
	baseline, err := load.next(ctx)
	if err != nil {
		return err
	}

	replicas, err := currentReplicas(ctx, admCl, reassignTopic)
	if err != nil {
		return err
	}
	half := parts / 2
	var first, second []int32
	for p := range parts {
		if p < half {
			first = append(first, p)
		} else {
			second = append(second, p)
		}
	}
	free, err := moveOnto(ctx, adm, admCl, replicas, first, four.id, stderr)
	if err != nil {
		return fmt.Errorf("unthrottled move: %w", err)
	}
	free.name = "unthrottled"
	if free.lat, err = load.next(ctx); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "unthrottled: %.1f MB in %v\n", float64(free.bytes)/mib, free.elapsed.Round(time.Millisecond))

	throttle := int64(rc.throttleMB * mib)
	cleanup, err := setReassignThrottle(ctx, adm, replicas, second, four.id, throttle, cl.nodes)
	if err != nil {
		return fmt.Errorf("setting the throttle: %w", err)
	}
	throttled, moveErr := moveOnto(ctx, adm, admCl, replicas, second, four.id, stderr)
	throttled.name = fmt.Sprintf("throttled %g MB/s", rc.throttleMB)
	// The throttle goes even when the move failed: it would otherwise
	// hold back every later reassignment of the topic.
	cleanErr := cleanup(context.WithoutCancel(ctx))
	if moveErr != nil {
		return fmt.Errorf("throttled move: %w", errors.Join(moveErr, cleanErr))
	}
	if cleanErr != nil {
		return fmt.Errorf("removing the throttle: %w", cleanErr)
	}
	if throttled.lat, err = load.next(ctx); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "throttled: %.1f MB in %v\n", float64(throttled.bytes)/mib, throttled.elapsed.Round(time.Millisecond))

	fmt.Fprintf(stdout, "\nmoving one replica of each partition onto broker %d, while an idempotent acks=all producer writes %.0f rec/s of %d bytes (linger 0) to the topic\n",
		four.id, rc.loadRate, c.recordSize)
	fmt.Fprintf(stdout, "%-22s %10s %9s %9s %8s %12s %12s %8s\n", "move", "partitions", "MB moved", "seconds", "MB/s", "producer p50", "producer p99", "failed")
	fmt.Fprintf(stdout, "%-22s %10s %9s %9s %8s %9.2f ms %9.2f ms %8d\n", "none (baseline)", "-", "-", "-", "-", ms(baseline.p50), ms(baseline.p99), baseline.failed)
	for _, m := range []moveResult{free, throttled} {
		fmt.Fprintf(stdout, "%-22s %10d %9.1f %9.2f %8.1f %9.2f ms %9.2f ms %8d\n", m.name, len(m.partitions),
			float64(m.bytes)/mib, m.elapsed.Seconds(), m.mbps(), ms(m.lat.p50), ms(m.lat.p99), m.lat.failed)
	}
	fmt.Fprintf(stdout, "ratio throttled/unthrottled MB/s: %.3f\n", ratio(throttled.mbps(), free.mbps()))
	fmt.Fprintf(stdout, "throttle configs removed: %s and %s (cluster-wide), %s and %s (topic %s)\n",
		leaderRateKey, followerRateKey, leaderReplicasKey, followerReplicasKey, reassignTopic)
	fmt.Fprintf(stdout, "load average after the run: %s\n", loadAverage())
	for _, w := range []latencyWindow{baseline, free.lat, throttled.lat} {
		if w.failed > 0 {
			return fmt.Errorf("%d acks=all records failed, first: %w", w.failed, w.firstErr)
		}
	}
	return nil
}

// Kafka's throttle keys.
const (
	leaderRateKey       = "leader.replication.throttled.rate"
	followerRateKey     = "follower.replication.throttled.rate"
	leaderReplicasKey   = "leader.replication.throttled.replicas"
	followerReplicasKey = "follower.replication.throttled.replicas"
)

// preloadRandom produces about size bytes of random values to topic,
// round robin over its partitions, acks=all without compression; it
// returns the records written.
func preloadRandom(ctx context.Context, seeds []string, topic string, parts int32, size int64) (int64, error) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(seeds...),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.MaxBufferedBytes(64<<20),
	)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	n := max(size/reassignPreloadRecord, int64(parts))
	var mu sync.Mutex
	var firstErr error
	for i := range n {
		v := make([]byte, reassignPreloadRecord)
		_, _ = crand.Read(v) // never fails (crypto/rand)
		cl.Produce(ctx, &kgo.Record{Partition: int32(i % int64(parts)), Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		})
		if ctx.Err() != nil {
			break
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, err
	}
	if firstErr != nil {
		return 0, fmt.Errorf("preload: %w", firstErr)
	}
	return n, ctx.Err()
}

// waitBrokers waits until Metadata lists n brokers.
func waitBrokers(ctx context.Context, adm *kadm.Client, n int) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		if b, err := adm.ListBrokers(ctx); err == nil && len(b) == n {
			return nil
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return fmt.Errorf("waiting for %d brokers: %w", n, err)
		}
	}
}

// currentReplicas asks a broker (not the client's metadata cache) for the
// replicas of topic's partitions.
func currentReplicas(ctx context.Context, cl *kgo.Client, topic string) (map[int32][]int32, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	out := map[int32][]int32{}
	for _, t := range resp.Topics {
		if t.Topic == nil || *t.Topic != topic {
			continue
		}
		if t.ErrorCode != 0 {
			return nil, fmt.Errorf("metadata of %s: error %d", topic, t.ErrorCode)
		}
		for _, p := range t.Partitions {
			out[p.Partition] = p.Replicas
		}
	}
	return out, nil
}

// moveTarget is replicas with its last one (a follower while the
// preferred leader leads) replaced by to: the move copies one full
// replica onto to without moving leadership.
func moveTarget(replicas []int32, to int32) []int32 {
	t := slices.Clone(replicas)
	t[len(t)-1] = to
	return t
}

// moveOnto reassigns partitions of the bench topic from their current
// replicas to moveTarget's and waits until the controller lists none of
// them in progress and a broker's metadata shows the targets; the bytes
// moved are the partitions' sizes on broker to at the end.
func moveOnto(ctx context.Context, adm *kadm.Client, cl *kgo.Client, replicas map[int32][]int32, partitions []int32, to int32, progress io.Writer) (moveResult, error) {
	m := moveResult{partitions: partitions}
	ctx, cancel := context.WithTimeout(ctx, reassignMoveTimeout)
	defer cancel()
	var req kadm.AlterPartitionAssignmentsReq
	set := kadm.TopicsSet{}
	for _, p := range partitions {
		req.Assign(reassignTopic, p, moveTarget(replicas[p], to))
		set.Add(reassignTopic, p)
	}
	start := time.Now()
	res, err := adm.AlterPartitionAssignments(ctx, req)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		return m, fmt.Errorf("AlterPartitionReassignments: %w", err)
	}
	lastReport := start
	for {
		done, err := movesDone(ctx, adm, cl, replicas, partitions, to)
		if err == nil && done {
			break
		}
		// The copy's progress each second: a throttle's rate is an
		// average over replication.quota.window.num samples, which
		// lets bursts through.
		if now := time.Now(); now.Sub(lastReport) >= time.Second {
			lastReport = now
			if dirs, err := adm.DescribeBrokerLogDirs(ctx, to, set); err == nil {
				fmt.Fprintf(progress, "  %6.1f s: %7.1f MB on broker %d\n", now.Sub(start).Seconds(), float64(dirs.Size())/mib, to)
			}
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return m, fmt.Errorf("waiting for the reassignments of %v: %w", partitions, err)
		}
	}
	m.elapsed = time.Since(start)
	dirs, err := adm.DescribeBrokerLogDirs(ctx, to, set)
	if err == nil {
		err = dirs.Error()
	}
	if err != nil {
		return m, fmt.Errorf("DescribeLogDirs of broker %d: %w", to, err)
	}
	for _, p := range partitions {
		d, ok := dirs.LookupPartition(reassignTopic, p)
		if !ok {
			return m, fmt.Errorf("broker %d does not host %s-%d after its reassignment", to, reassignTopic, p)
		}
		m.bytes += d.Size
	}
	return m, nil
}

func movesDone(ctx context.Context, adm *kadm.Client, cl *kgo.Client, replicas map[int32][]int32, partitions []int32, to int32) (bool, error) {
	set := kadm.TopicsSet{}
	for _, p := range partitions {
		set.Add(reassignTopic, p)
	}
	active, err := adm.ListPartitionReassignments(ctx, set)
	if err != nil || len(active[reassignTopic]) > 0 {
		return false, err
	}
	cur, err := currentReplicas(ctx, cl, reassignTopic)
	if err != nil {
		return false, err
	}
	for _, p := range partitions {
		if !slices.Equal(cur[p], moveTarget(replicas[p], to)) {
			return false, nil
		}
	}
	return true, nil
}

// setReassignThrottle sets the throttle of a reassignment of partitions
// onto broker to as kafka-reassign-partitions.sh --throttle does, waits
// until every node applies the rates, and returns the function removing
// it all again.
func setReassignThrottle(ctx context.Context, adm *kadm.Client, replicas map[int32][]int32, partitions []int32, to int32, bytesPerSec int64, nodes []*benchNode) (func(context.Context) error, error) {
	var leaders, followers []string
	for _, p := range partitions {
		for _, b := range replicas[p] {
			leaders = append(leaders, fmt.Sprintf("%d:%d", p, b))
		}
		followers = append(followers, fmt.Sprintf("%d:%d", p, to))
	}
	rateStr := strconv.FormatInt(bytesPerSec, 10)
	leaderList, followerList := strings.Join(leaders, ","), strings.Join(followers, ",")
	cleanup := func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		bres, berr := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
			{Op: kadm.DeleteConfig, Name: leaderRateKey},
			{Op: kadm.DeleteConfig, Name: followerRateKey},
		})
		tres, terr := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
			{Op: kadm.DeleteConfig, Name: leaderReplicasKey},
			{Op: kadm.DeleteConfig, Name: followerReplicasKey},
		}, reassignTopic)
		return errors.Join(berr, alterErr(bres), terr, alterErr(tres))
	}
	bres, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
		{Name: leaderRateKey, Value: &rateStr},
		{Name: followerRateKey, Value: &rateStr},
	})
	if err == nil {
		err = alterErr(bres)
	}
	if err != nil {
		return nil, fmt.Errorf("cluster-wide %s, %s: %w", leaderRateKey, followerRateKey, err)
	}
	tres, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Name: leaderReplicasKey, Value: &leaderList},
		{Name: followerReplicasKey, Value: &followerList},
	}, reassignTopic)
	if err == nil {
		err = alterErr(tres)
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("topic %s throttled replicas: %w", reassignTopic, err), cleanup(ctx))
	}
	// Each broker applies the configs from its own metadata: the move
	// starts once all of them throttle.
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, n := range nodes {
		for {
			err := brokerHasRate(wctx, n.addr, n.id, rateStr)
			if err == nil {
				break
			}
			if sleepCtx(wctx, 100*time.Millisecond) != nil {
				return nil, errors.Join(fmt.Errorf("broker %d applying the throttle: %w", n.id, err), cleanup(ctx))
			}
		}
	}
	return cleanup, nil
}

// brokerHasRate asks broker id itself whether both throttle rates are
// value.
func brokerHasRate(ctx context.Context, addr string, id int32, value string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	rcs, err := kadm.NewClient(cl).DescribeBrokerConfigs(ctx, id)
	if err != nil {
		return err
	}
	for _, rc := range rcs {
		if rc.Err != nil {
			return rc.Err
		}
		for _, k := range []string{leaderRateKey, followerRateKey} {
			i := slices.IndexFunc(rc.Configs, func(c kadm.Config) bool { return c.Key == k })
			if i < 0 || rc.Configs[i].Value == nil || *rc.Configs[i].Value != value {
				return fmt.Errorf("%s not %s yet", k, value)
			}
		}
	}
	return nil
}

func alterErr(rs kadm.AlterConfigsResponses) error {
	for _, r := range rs {
		if r.Err != nil {
			return fmt.Errorf("%s: %w (%s)", r.Name, r.Err, r.ErrMessage)
		}
	}
	return nil
}
