package bench

// kbroker bench --mode failover: a default franz-go producer (idempotent,
// acks=all) writes to every partition at a steady rate while each broker
// in turn is killed with SIGKILL and restarted. Per kill it reports the
// longest gap between two acknowledgements of one partition (how long
// that partition could not take writes) and how long a group's committed
// offsets were unreadable (the group coordinator's failover).

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	failoverTopic = "bench-failover"
	failoverGroup = "bench-failover-group"
	// failoverWindow bounds how long one kill is watched.
	failoverWindow = 45 * time.Second
)

// ackGaps tracks, per partition, the last acknowledgement and the
// longest gap between two since the current kill.
type ackGaps struct {
	mu      sync.Mutex
	since   time.Time // the kill
	lastAck []time.Time
	maxGap  []time.Duration
	failed  int64
	errs    map[string]int // failed records by errorClass
}

// errorClass names a failed record's error and whether Kafka calls it
// retriable (a producer that gives up on a retriable error has run out
// of delivery time; any other error is one the broker should not send).
func errorClass(err error) string {
	if kerr.IsRetriable(err) {
		return "retriable: " + err.Error()
	}
	return "not retriable: " + err.Error()
}

// failures returns the failed records' count and their classes.
func (g *ackGaps) failures() (int64, map[string]int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.failed, maps.Clone(g.errs)
}

func newAckGaps(partitions int) *ackGaps {
	g := &ackGaps{lastAck: make([]time.Time, partitions), maxGap: make([]time.Duration, partitions), errs: map[string]int{}}
	now := time.Now()
	for i := range g.lastAck {
		g.lastAck[i] = now
	}
	return g
}

func (g *ackGaps) ack(p int32, err error) {
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if err != nil {
		g.failed++
		g.errs[errorClass(err)]++
		return
	}
	if !g.since.IsZero() && now.After(g.since) {
		if gap := now.Sub(g.lastAck[p]); gap > g.maxGap[p] {
			g.maxGap[p] = gap
		}
	}
	g.lastAck[p] = now
}

// reset starts a new kill at t.
func (g *ackGaps) reset(t time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.since = t
	clear(g.maxGap)
}

// recovered reports whether every partition has been acknowledged after
// the kill, and the longest gap with the partition it was on (an
// unrecovered partition counts its gap up to now).
func (g *ackGaps) recovered() (bool, int32, time.Duration) {
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	all := true
	var worst time.Duration
	var worstP int32
	for p, last := range g.lastAck {
		gap := g.maxGap[p]
		if !last.After(g.since) {
			all = false
			gap = now.Sub(last)
		}
		if gap > worst {
			worst, worstP = gap, int32(p)
		}
	}
	return all, worstP, worst
}

type killResult struct {
	node              int32
	coordinator       bool
	controller        bool
	gap               time.Duration
	gapPartition      int32
	recovered         bool
	coordFailover     time.Duration
	coordRecovered    bool
	killedAt, readyAt time.Time
}

func runFailover(ctx context.Context, c benchConfig, cl *benchCluster, stdout io.Writer) error {
	if err := createBenchTopic(ctx, cl.seeds(), failoverTopic, int32(c.partitions), 3, nil); err != nil {
		return err
	}
	prod, closeLog, err := newBenchProducer(cl.seeds(), failoverTopic, c.clientLog)
	if err != nil {
		return err
	}
	defer closeLog()
	defer prod.Close()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(cl.seeds()...))
	if err != nil {
		return err
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)

	var committed kadm.Offsets
	for p := range int32(c.partitions) {
		committed.Add(kadm.Offset{Topic: failoverTopic, Partition: p, At: int64(p) + 1, LeaderEpoch: -1})
	}
	// The first commit creates __consumer_offsets; retry until its
	// partitions are hosted.
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	for {
		if err = adm.CommitAllOffsets(cctx, failoverGroup, committed); err == nil || sleepCtx(cctx, 200*time.Millisecond) != nil {
			break
		}
	}
	cancel()
	if err != nil {
		return fmt.Errorf("committing the group's offsets: %w", err)
	}

	gaps := newAckGaps(c.partitions)
	stopLoad := pacedLoad(ctx, prod, c.rate, c.partitions, c.recordSize, gaps)
	defer stopLoad()

	// The first kill waits --settle too: a producer younger than
	// franz-go's metadata min age (5 s) since its first Metadata cannot
	// refresh sooner, which would measure the client's pacing instead.
	if err := sleepCtx(ctx, firstKillAfter(c.settle)); err != nil {
		return err
	}
	var results []killResult
	for k := range c.kills {
		node := cl.nodes[k%len(cl.nodes)]
		r := killResult{node: node.id}
		if co := adm.FindGroupCoordinators(ctx, failoverGroup)[failoverGroup]; co.Err == nil {
			r.coordinator = co.NodeID == node.id
		}
		if md, err := adm.BrokerMetadata(ctx); err == nil {
			r.controller = md.Controller == node.id
		}
		r.killedAt = time.Now()
		gaps.reset(r.killedAt)
		node.kill()

		var coord sync.WaitGroup
		coord.Go(func() {
			r.coordFailover, r.coordRecovered = waitOffsetsReadable(ctx, cl.seeds(), committed, r.killedAt, stdout)
		})
		deadline := r.killedAt.Add(failoverWindow)
		for time.Now().Before(deadline) && ctx.Err() == nil {
			if ok, _, _ := gaps.recovered(); ok {
				break
			}
			_ = sleepCtx(ctx, 20*time.Millisecond) // the loop checks ctx
		}
		coord.Wait()
		// A moment more so slow partitions' gaps are complete.
		_ = sleepCtx(ctx, 500*time.Millisecond) // a cancelled run still reports
		r.recovered, r.gapPartition, r.gap = gaps.recovered()

		if err := node.start(cl.bin); err != nil {
			return err
		}
		if err := node.waitReady(ctx); err != nil {
			return err
		}
		r.readyAt = time.Now()
		if err := waitFullISR(ctx, adm, failoverTopic, 3); err != nil {
			return err
		}
		results = append(results, r)
		fmt.Fprintf(stdout, "kill %d: node %d (coordinator %v, controller %v) at %s: longest ack gap %v (partition %d, recovered %v), committed offsets readable after %v (recovered %v)\n",
			k+1, r.node, r.coordinator, r.controller, r.killedAt.UTC().Format("15:04:05.000"),
			r.gap.Round(time.Millisecond), r.gapPartition, r.recovered, r.coordFailover.Round(time.Millisecond), r.coordRecovered)
		// Let leadership rebalance back, and the client's metadata
		// refreshes settle, before the next kill: franz-go refreshes at
		// most every 5 s (metadata min age) and a kill often queues a
		// second refresh behind the first, so a kill within ~5 s of that
		// one waits for it client-side, whatever the brokers do.
		if err := sleepCtx(ctx, c.settle); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "\n%-5s %-5s %-6s %-6s %14s %18s\n", "kill", "node", "coord", "ctrl", "max ack gap", "offsets readable")
	for i, r := range results {
		fmt.Fprintf(stdout, "%-5d %-5d %-6v %-6v %14v %18v\n", i+1, r.node, r.coordinator, r.controller, r.gap.Round(time.Millisecond), r.coordFailover.Round(time.Millisecond))
	}
	failed, classes := gaps.failures()
	fmt.Fprintf(stdout, "failed records: %d %v; load average %s\n", failed, classes, loadAverage())
	return nil
}

// firstKillAfter is how long the load runs before the first kill or
// restart: the settle time, but at least long enough for the producer's
// first metadata refresh window to have passed.
func firstKillAfter(settle time.Duration) time.Duration {
	return max(settle, 6*time.Second)
}

// newBenchProducer is a franz-go producer with its defaults (idempotent,
// acks=all) writing to topic's partitions by number, with an optional
// timestamped debug log (to tell a broker that answers late or wrongly
// from the client's own metadata refresh pacing).
func newBenchProducer(seeds []string, topic, logPath string) (*kgo.Client, func(), error) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	}
	closeLog := func() {}
	if logPath != "" {
		f, err := os.Create(logPath)
		if err != nil {
			return nil, nil, fmt.Errorf("--client-log: %w", err)
		}
		closeLog = func() { f.Close() }
		opts = append(opts, kgo.WithLogger(clientLogger(f)))
	}
	prod, err := kgo.NewClient(opts...)
	if err != nil {
		closeLog()
		return nil, nil, err
	}
	return prod, closeLog, nil
}

// pacedLoad produces rate records/s round robin over the partitions,
// recording each acknowledgement in gaps, until the returned stop is
// called (which waits for the producing goroutine).
func pacedLoad(ctx context.Context, prod *kgo.Client, rate float64, partitions, recordSize int, gaps *ackGaps) (stop func()) {
	loadCtx, cancel := context.WithCancel(ctx)
	var load sync.WaitGroup
	load.Go(func() {
		value := payload(recordSize)
		start := time.Now()
		for n := int64(0); loadCtx.Err() == nil; n++ {
			if ahead := time.Duration(float64(n)/rate*float64(time.Second)) - time.Since(start); ahead > 0 {
				select {
				case <-time.After(ahead):
				case <-loadCtx.Done():
					return
				}
			}
			p := int32(n % int64(partitions))
			prod.Produce(loadCtx, &kgo.Record{Partition: p, Value: value}, func(r *kgo.Record, err error) { gaps.ack(r.Partition, err) })
		}
	})
	return func() { cancel(); load.Wait() }
}

// fetchOffsetsFresh reads the group's committed offsets with a new
// client, as a restarting consumer would: franz-go keeps a group's
// coordinator cached until the coordinator answers NOT_COORDINATOR (or
// similar), so a long-lived client keeps dialing a dead coordinator and
// would measure that cache, not the broker's failover.
func fetchOffsetsFresh(ctx context.Context, seeds []string) (kadm.OffsetResponses, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	return kadm.NewClient(cl).FetchOffsets(ctx, failoverGroup)
}

// waitOffsetsReadable polls the group's committed offsets until they read
// back as committed; it returns the time since killedAt.
func waitOffsetsReadable(ctx context.Context, seeds []string, want kadm.Offsets, killedAt time.Time, stdout io.Writer) (time.Duration, bool) {
	deadline := killedAt.Add(failoverWindow)
	var last error
	for time.Now().Before(deadline) && ctx.Err() == nil {
		got, err := fetchOffsetsFresh(ctx, seeds)
		switch {
		case err != nil:
			last = err
		case got.Error() != nil:
			last = got.Error()
		case !offsetsMatch(got.Offsets(), want):
			last = fmt.Errorf("offsets read back as %v", got.Offsets())
		default:
			return time.Since(killedAt), true
		}
		_ = sleepCtx(ctx, 20*time.Millisecond) // the loop checks ctx
	}
	fmt.Fprintf(stdout, "committed offsets still unreadable: %v\n", last)
	return time.Since(killedAt), false
}

func offsetsMatch(got, want kadm.Offsets) bool {
	ok := true
	want.Each(func(o kadm.Offset) {
		g, found := got.Lookup(o.Topic, o.Partition)
		if !found || g.At != o.At {
			ok = false
		}
	})
	return ok
}

// waitFullISR waits until every partition of topic has rf ISR members.
func waitFullISR(ctx context.Context, adm *kadm.Client, topic string, rf int) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			full := true
			for _, p := range md.Topics[topic].Partitions {
				if len(p.ISR) < rf || p.Leader < 0 {
					full = false
				}
			}
			if full {
				return nil
			}
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return fmt.Errorf("waiting for a full ISR on %s: %w", topic, err)
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// clientLogger is franz-go's debug log with UTC millisecond timestamps, to
// line up with the nodes' logs.
func clientLogger(w io.Writer) kgo.Logger {
	return kgo.BasicLogger(w, kgo.LogLevelDebug, func() string { return time.Now().UTC().Format("15:04:05.000 ") })
}
