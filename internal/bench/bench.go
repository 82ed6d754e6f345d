package bench

// kbroker bench: throughput and latency of a local three-node kbroker
// cluster next to franz-go's in-memory kfake (three brokers) in the same
// run, so a loaded machine slows both and the ratio stays meaningful; and
// a failover mode that kills -9 each broker in turn under load.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kbroker/kbroker/internal/cliflag"
)

type benchConfig struct {
	mode       string
	duration   time.Duration
	partitions int
	rf         int
	recordSize int
	rounds     int
	dir        string
	keep       bool
	sets       []string
	profileDir string
	kills      int
	topics     int
	settle     time.Duration
	rate       float64
	durable    bool
	nodeBin    string
	clientLog  string
	reassign   reassignBenchConfig
	// scale mode (bench_scale.go)
	scaleCounts []int
	idleWindow  time.Duration
	scaleProp   int // partitions of the propagation topic (tests shrink it)
}

func parseBenchFlags(args []string, stderr io.Writer) (benchConfig, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c benchConfig
	fs.StringVar(&c.mode, "mode", "compare", "compare (kbroker vs kfake throughput and latency), failover (kill -9 each broker in turn under load), rolling (SIGTERM and restart each broker in turn under load), newtopic (time from creating a topic to its first acks=all records), reassign (move partitions onto a new broker with and without a replication throttle) or scale (creation, restart, idle cost of many partitions)")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "length of each produce run")
	fs.IntVar(&c.partitions, "partitions", 6, "partitions of the bench topic (replication factor 3, min.insync.replicas 2)")
	fs.IntVar(&c.rf, "replication-factor", 3, "compare: replication factor of the bench topics (1 shows what replication costs; kfake ignores it)")
	fs.IntVar(&c.recordSize, "record-size", 100, "value bytes per record")
	fs.IntVar(&c.rounds, "rounds", 2, "compare: full-speed rounds per target (the best is kept)")
	fs.StringVar(&c.dir, "dir", "", "data and log directory of the kbroker nodes (default: a new temporary one)")
	fs.BoolVar(&c.keep, "keep", false, "keep --dir (node logs, data) after the run")
	var sets cliflag.StringList
	fs.Var(&sets, "set", "a key=value given to every kbroker node (repeatable)")
	fs.StringVar(&c.profileDir, "profile-dir", "", "compare: write each node's CPU, mutex and heap profiles of the full-speed produce here; scale: each node's profiles over an idle window after the measured one")
	fs.IntVar(&c.kills, "kills", 6, "failover, rolling: kills or restarts (round robin over the three nodes)")
	fs.IntVar(&c.topics, "topics", 15, "newtopic: topics created and written, one after the other")
	fs.DurationVar(&c.settle, "settle", 14*time.Second, "failover, rolling: time every node is back in every ISR before the next kill or restart")
	fs.Float64Var(&c.rate, "rate", 3000, "failover, rolling: records/s produced during the kills or restarts")
	fs.StringVar(&c.nodeBin, "kbroker", "", "kbroker binary the nodes run (default: this one), e.g. an older build to compare with")
	fs.StringVar(&c.clientLog, "client-log", "", "write the producer's franz-go debug log (timestamped: Metadata requests, answers, leader moves) to this file")
	fs.BoolVar(&c.durable, "durable", false, "compare: also measure a topic with flush.messages=1 (fsync before acks=all completes)")
	addReassignBenchFlags(fs, &c.reassign)
	scaleCounts := fs.String("scale-partitions", "1000,10000", "scale: partition counts to measure (RF 3), each on a fresh cluster; ratios are to the first")
	fs.DurationVar(&c.idleWindow, "idle-window", 30*time.Second, "scale: how long each node's idle CPU is measured")
	if err := fs.Parse(args); err != nil {
		return c, parseError{err}
	}
	c.sets = sets
	counts, err := parseCounts(*scaleCounts)
	if err != nil {
		return c, flagErr("scale-partitions", "%v", err)
	}
	c.scaleCounts = counts
	switch {
	case !slices.Contains([]string{"compare", "failover", "rolling", "newtopic", "reassign", "scale"}, c.mode):
		return c, flagErr("mode", "must be compare, failover, rolling, newtopic, reassign or scale, got %q", c.mode)
	case c.idleWindow <= 0:
		return c, flagErr("idle-window", "must be positive")
	case c.duration <= 0:
		return c, flagErr("duration", "must be positive")
	case c.partitions <= 0:
		return c, flagErr("partitions", "must be positive")
	case c.rf < 1 || c.rf > 3:
		return c, flagErr("replication-factor", "must be 1, 2 or 3 (three nodes)")
	case c.recordSize <= 0:
		return c, flagErr("record-size", "must be positive")
	case c.rounds <= 0:
		return c, flagErr("rounds", "must be positive")
	case c.kills <= 0:
		return c, flagErr("kills", "must be positive")
	case c.topics <= 0:
		return c, flagErr("topics", "must be positive")
	case c.settle < 0:
		return c, flagErr("settle", "must not be negative")
	case c.rate <= 0:
		return c, flagErr("rate", "must be positive")
	}
	if c.mode == "reassign" {
		return c, c.reassign.validate(c.partitions)
	}
	return c, nil
}

// Run runs "kbroker bench" until the run ends or SIGINT or SIGTERM
// cancels it. Flag errors exit 2, a failed run exits 1.
func Run(args []string, stdout, stderr io.Writer) int {
	c, err := parseBenchFlags(args, stderr)
	if err != nil {
		return flagExit(err, "bench", stderr)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := runBench(ctx, c, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "kbroker bench: %v\n", err)
		return 1
	}
	return 0
}

func runBench(ctx context.Context, c benchConfig, stdout, stderr io.Writer) error {
	bin, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding this binary to start nodes: %w", err)
	}
	if c.nodeBin != "" {
		bin = c.nodeBin
	}
	if c.dir == "" {
		if c.dir, err = os.MkdirTemp("", "kbroker-bench-"); err != nil {
			return err
		}
	}
	if !c.keep {
		defer func() {
			if err := os.RemoveAll(c.dir); err != nil {
				fmt.Fprintf(stdout, "could not remove the bench data: %v\n", err)
			}
		}()
	}
	fmt.Fprintf(stdout, "machine: %d CPUs, load average %s (other work on the machine slows both targets alike; compare ratios)\n", runtime.NumCPU(), loadAverage())
	fmt.Fprintf(stdout, "kbroker nodes: %s (logs node-N.log)\n", c.dir)
	if c.mode == "scale" {
		return runScale(ctx, c, bin, stdout, stderr)
	}
	cl, err := newBenchCluster(bin, c.dir, c.sets, c.profileDir != "")
	if err != nil {
		return err
	}
	defer cl.stop()
	if err := cl.start(ctx); err != nil {
		return err
	}
	switch c.mode {
	case "failover":
		return runFailover(ctx, c, cl, stdout)
	case "rolling":
		return runRolling(ctx, c, cl, stdout)
	case "newtopic":
		return runNewTopic(ctx, c, cl, stdout)
	}
	if c.mode == "reassign" {
		return runReassignBench(ctx, c, cl, stdout, stderr)
	}
	fake, err := kfake.NewCluster(kfake.NumBrokers(3))
	if err != nil {
		return fmt.Errorf("starting kfake: %w", err)
	}
	defer fake.Close()
	return runCompare(ctx, c, cl, fake.ListenAddrs(), stdout, stderr)
}

type benchTarget struct {
	name    string
	seeds   []string
	configs map[string]*string
	cluster *benchCluster // nil for kfake
}

func runCompare(ctx context.Context, c benchConfig, cl *benchCluster, fakeSeeds []string, stdout, stderr io.Writer) error {
	minISR := "2"
	targets := []benchTarget{
		{name: "kfake", seeds: fakeSeeds},
		{name: "kbroker", seeds: cl.seeds(), cluster: cl, configs: map[string]*string{"min.insync.replicas": &minISR}},
	}
	if c.durable {
		one := "1"
		targets = append(targets, benchTarget{name: "kbroker-durable", seeds: cl.seeds(), cluster: cl,
			configs: map[string]*string{"min.insync.replicas": &minISR, "flush.messages": &one}})
	}
	var clientLog kgo.Logger
	if c.clientLog != "" {
		f, err := os.Create(c.clientLog)
		if err != nil {
			return fmt.Errorf("--client-log: %w", err)
		}
		defer f.Close()
		clientLog = clientLogger(f)
	}
	best := make(map[string][2]loadResult) // produce, consume
	topicN := 0
	newTopic := func(t benchTarget) (string, error) {
		topicN++
		topic := fmt.Sprintf("bench-%d", topicN)
		if err := createBenchTopic(ctx, t.seeds, topic, int32(c.partitions), int16(c.rf), t.configs); err != nil {
			return topic, err
		}
		return topic, warmTopic(ctx, t.seeds, topic, int32(c.partitions))
	}
	for round := range c.rounds {
		for _, t := range targets {
			topic, err := newTopic(t)
			if err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			var stopProfiles func()
			if t.cluster != nil && c.profileDir != "" && round == 0 && t.name == "kbroker" {
				stopProfiles = t.cluster.profile(ctx, c.profileDir, c.duration, stderr)
			}
			cpu0 := t.cluster.sampleCPU()
			var logger kgo.Logger
			if t.cluster != nil {
				logger = clientLog
			}
			p, err := benchProduce(ctx, produceSpec{seeds: t.seeds, topic: topic, recordSize: c.recordSize, duration: c.duration, linger: 10 * time.Millisecond, logger: logger})
			cpu1 := t.cluster.sampleCPU()
			p.nodeCPU, p.selfCPU = perRecord(cpu0.nodes, cpu1.nodes, p.records), perRecord(cpu0.self, cpu1.self, p.records)
			if stopProfiles != nil {
				stopProfiles()
			}
			if err != nil {
				return fmt.Errorf("%s produce: %w", t.name, err)
			}
			if p.failed > 0 {
				return fmt.Errorf("%s produce: %d records failed: %w", t.name, p.failed, p.firstErr)
			}
			cons, err := benchConsume(ctx, t.seeds, topic, p.records)
			if err != nil {
				return fmt.Errorf("%s consume: %w", t.name, err)
			}
			fmt.Fprintf(stderr, "round %d %-16s produce %10.0f rec/s  consume %10.0f rec/s\n", round+1, t.name, p.rate(), cons.rate())
			b := best[t.name]
			if p.rate() > b[0].rate() {
				b[0] = p
			}
			if cons.rate() > b[1].rate() {
				b[1] = cons
			}
			best[t.name] = b
		}
	}
	full := best["kbroker"][0].rate()
	type latRow struct {
		label string
		res   map[string]loadResult
	}
	var lats []latRow
	// Half and a quarter of kbroker's full rate (the goals), and a
	// light fixed load where neither target is short of CPU.
	for _, frac := range []struct {
		label string
		rate  float64
	}{{"half of kbroker's full rate", full * 0.5}, {"a quarter of kbroker's full rate", full * 0.25}, {"a light load", 20_000}} {
		rate := frac.rate
		row := latRow{label: fmt.Sprintf("%s (%.0f rec/s, linger 0)", frac.label, rate), res: map[string]loadResult{}}
		for _, t := range targets {
			topic, err := newTopic(t)
			if err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			var logger kgo.Logger
			if t.cluster != nil {
				logger = clientLog
			}
			r, err := benchProduce(ctx, produceSpec{seeds: t.seeds, topic: topic, recordSize: c.recordSize, duration: c.duration, rate: rate, logger: logger})
			if err != nil {
				return fmt.Errorf("%s paced produce: %w", t.name, err)
			}
			fmt.Fprintf(stderr, "%.0f rec/s %-16s p50 %v p99 %v (%.0f rec/s, %d failed %v)\n", rate, t.name, r.p50, r.p99, r.rate(), r.failed, r.firstErr)
			row.res[t.name] = r
		}
		lats = append(lats, row)
	}

	fk, kb := best["kfake"], best["kbroker"]
	fmt.Fprintf(stdout, "\n%d partitions, RF %d (kbroker min.insync.replicas 2), %d-byte values, idempotent acks=all, no compression, best of %d × %v\n",
		c.partitions, c.rf, c.recordSize, c.rounds, c.duration)
	fmt.Fprintf(stdout, "%-44s %14s %14s %8s\n", "", "kfake", "kbroker", "ratio")
	fmt.Fprintf(stdout, "%-44s %14.0f %14.0f %8.2f\n", "produce rec/s (linger 10ms)", fk[0].rate(), kb[0].rate(), ratio(kb[0].rate(), fk[0].rate()))
	fmt.Fprintf(stdout, "%-44s %14.0f %14.0f %8.2f\n", "consume rec/s", fk[1].rate(), kb[1].rate(), ratio(kb[1].rate(), fk[1].rate()))
	// kfake runs inside this process, so its CPU is in the second row
	// with the client's; the nodes' is kbroker's alone.
	fmt.Fprintf(stdout, "%-44s %14s %14.2f\n", "produce CPU µs/record, the three nodes", "-", kb[0].nodeCPU)
	fmt.Fprintf(stdout, "%-44s %14.2f %14.2f\n", "produce CPU µs/record, this process", fk[0].selfCPU, kb[0].selfCPU)
	if d, ok := best["kbroker-durable"]; ok {
		fmt.Fprintf(stdout, "%-44s %14s %14.0f %8.2f  (vs kbroker default)\n", "produce rec/s, flush.messages=1", "", d[0].rate(), ratio(d[0].rate(), kb[0].rate()))
	}
	for _, row := range lats {
		fmt.Fprintf(stdout, "%s\n", row.label)
		for _, t := range targets {
			r := row.res[t.name]
			fmt.Fprintf(stdout, "  %-16s p50 %8.2f ms  p99 %8.2f ms  (%.0f rec/s achieved)\n", t.name, ms(r.p50), ms(r.p99), r.rate())
		}
	}
	fmt.Fprintf(stdout, "load average after the run: %s\n", loadAverage())
	return nil
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// loadAverage is /proc/loadavg's first three fields, or "unknown".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// profile fetches, from every node's admin listener, a CPU profile over
// d and then mutex and heap profiles, into dir; the returned func waits
// for them.
func (c *benchCluster) profile(ctx context.Context, dir string, d time.Duration, stderr io.Writer) func() {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintf(stderr, "profiles: %v\n", err)
		return func() {}
	}
	secs := max(int(d/time.Second)-1, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		fetch := func(n *benchNode, path, file string) {
			hc := &http.Client{Timeout: d + 30*time.Second}
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.adminAddr+path, nil)
			resp, err := hc.Do(req)
			if err != nil {
				fmt.Fprintf(stderr, "profile node %d %s: %v\n", n.id, path, err)
				return
			}
			defer resp.Body.Close()
			f, err := os.Create(filepath.Join(dir, file))
			if err == nil {
				_, err = io.Copy(f, resp.Body)
				err = errors.Join(err, f.Close())
			}
			if err != nil || resp.StatusCode != http.StatusOK {
				fmt.Fprintf(stderr, "profile node %d %s: status %d %v\n", n.id, path, resp.StatusCode, err)
			}
		}
		done := make(chan struct{}, len(c.nodes))
		for _, n := range c.nodes {
			go func() {
				fetch(n, fmt.Sprintf("/debug/pprof/profile?seconds=%d", secs), fmt.Sprintf("node-%d.cpu.pprof", n.id))
				fetch(n, "/debug/pprof/mutex", fmt.Sprintf("node-%d.mutex.pprof", n.id))
				fetch(n, "/debug/pprof/allocs", fmt.Sprintf("node-%d.allocs.pprof", n.id))
				done <- struct{}{}
			}()
		}
		for range c.nodes {
			<-done
		}
	}()
	return func() { <-done }
}
