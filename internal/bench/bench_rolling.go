package bench

// kbroker bench --mode rolling: a rolling restart under load. Each broker
// in turn gets SIGTERM (a controlled shutdown), exits, starts again and
// rejoins every ISR while a default franz-go producer writes to every
// partition. Per restart it reports how long the broker took to exit, the
// longest time any partition had no usable leader (Metadata polled every
// rollingPoll from a broker that stays up), the longest gap between two
// acknowledgements of one partition, and the records the producer saw
// fail (a controlled shutdown should cost clients nothing but retries).

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	rollingTopic = "bench-rolling"
	// rollingPoll is the leader monitor's Metadata interval, the
	// resolution of the leaderless times it reports.
	rollingPoll = 10 * time.Millisecond
	// rollingGrace bounds a controlled shutdown before the bench kills.
	rollingGrace = 60 * time.Second
)

// leaderWatch records, per partition, the longest continuous time the
// watched broker's Metadata showed it without a usable leader: no leader,
// or a leader whose process has exited.
type leaderWatch struct {
	mu           sync.Mutex
	missingSince []time.Time // zero while the partition has a leader
	longest      []time.Duration
	polls        int
	pollErrs     int
}

func newLeaderWatch(partitions int) *leaderWatch {
	return &leaderWatch{missingSince: make([]time.Time, partitions), longest: make([]time.Duration, partitions)}
}

// observe folds one Metadata answer taken at now into the watch.
func (w *leaderWatch) observe(now time.Time, leaders map[int32]int32, down int32, downExited bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.polls++
	for p := range w.missingSince {
		leader, ok := leaders[int32(p)]
		missing := !ok || leader < 0 || (leader == down && downExited)
		switch {
		case missing && w.missingSince[p].IsZero():
			w.missingSince[p] = now
		case !missing && !w.missingSince[p].IsZero():
			w.longest[p] = max(w.longest[p], now.Sub(w.missingSince[p]))
			w.missingSince[p] = time.Time{}
		}
	}
}

// result returns the longest leaderless time (an interval still open
// counts up to now) and its partition, then starts a new restart.
func (w *leaderWatch) result(now time.Time) (time.Duration, int32, int, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var worst time.Duration
	var worstP int32
	for p := range w.longest {
		d := w.longest[p]
		if !w.missingSince[p].IsZero() {
			d = max(d, now.Sub(w.missingSince[p]))
		}
		if d > worst {
			worst, worstP = d, int32(p)
		}
	}
	polls, errs := w.polls, w.pollErrs
	clear(w.longest)
	w.polls, w.pollErrs = 0, 0
	return worst, worstP, polls, errs
}

func (w *leaderWatch) pollFailed() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pollErrs++
}

type restartResult struct {
	node         int32
	controller   bool
	exitAfter    time.Duration // SIGTERM to exit
	leaderless   time.Duration
	leaderlessP  int32
	polls, errs  int
	gap          time.Duration
	gapPartition int32
	failed       int64
	classes      map[string]int
}

func runRolling(ctx context.Context, c benchConfig, cl *benchCluster, stdout io.Writer) error {
	if err := createBenchTopic(ctx, cl.seeds(), rollingTopic, int32(c.partitions), 3, nil); err != nil {
		return err
	}
	if err := warmTopic(ctx, cl.seeds(), rollingTopic, int32(c.partitions)); err != nil {
		return err
	}
	prod, closeLog, err := newBenchProducer(cl.seeds(), rollingTopic, c.clientLog)
	if err != nil {
		return err
	}
	defer closeLog()
	defer prod.Close()
	mon, err := kgo.NewClient(kgo.SeedBrokers(cl.seeds()...))
	if err != nil {
		return err
	}
	defer mon.Close()

	gaps := newAckGaps(c.partitions)
	stopLoad := pacedLoad(ctx, prod, c.rate, c.partitions, c.recordSize, gaps)
	defer stopLoad()
	if err := sleepCtx(ctx, firstKillAfter(c.settle)); err != nil {
		return err
	}

	var results []restartResult
	for k := range c.kills {
		node := cl.nodes[k%len(cl.nodes)]
		watcher := cl.nodes[(k+1)%len(cl.nodes)]
		r := restartResult{node: node.id}
		if md, err := rollingMetadata(ctx, mon, watcher.id); err == nil {
			r.controller = md.ControllerID == node.id
		}
		watch := newLeaderWatch(c.partitions)
		exited := make(chan struct{}) // closed once the node's process is gone
		monCtx, stopMon := context.WithCancel(ctx)
		var monitor sync.WaitGroup
		monitor.Go(func() { watchLeaders(monCtx, mon, watcher.id, node.id, exited, watch) })

		start := time.Now()
		gaps.reset(start)
		node.terminate(rollingGrace)
		r.exitAfter = time.Since(start)
		close(exited)
		err := node.start(cl.bin)
		if err == nil {
			err = node.waitReady(ctx)
		}
		if err == nil {
			err = waitFullISR(ctx, kadm.NewClient(mon), rollingTopic, 3)
		}
		stopMon()
		monitor.Wait()
		if err != nil {
			return err
		}
		r.leaderless, r.leaderlessP, r.polls, r.errs = watch.result(time.Now())
		_, r.gapPartition, r.gap = gaps.recovered()
		r.failed, r.classes = gaps.failures()
		results = append(results, r)
		fmt.Fprintf(stdout, "restart %d: node %d (controller %v): exited after %v; longest without a leader %v (partition %d, %d polls, %d failed); longest ack gap %v (partition %d); failed records so far %d %v\n",
			k+1, r.node, r.controller, r.exitAfter.Round(time.Millisecond), r.leaderless.Round(time.Millisecond), r.leaderlessP,
			r.polls, r.errs, r.gap.Round(time.Millisecond), r.gapPartition, r.failed, r.classes)
		if err := sleepCtx(ctx, c.settle); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "\n%-8s %-5s %-6s %12s %16s %14s\n", "restart", "node", "ctrl", "exit after", "leaderless max", "max ack gap")
	for i, r := range results {
		fmt.Fprintf(stdout, "%-8d %-5d %-6v %12v %16v %14v\n", i+1, r.node, r.controller, r.exitAfter.Round(time.Millisecond),
			r.leaderless.Round(time.Millisecond), r.gap.Round(time.Millisecond))
	}
	failed, classes := gaps.failures()
	fmt.Fprintf(stdout, "leaderless: Metadata every %v from a broker that stays up; failed records: %d %v; load average %s\n",
		rollingPoll, failed, classes, loadAverage())
	return nil
}

// watchLeaders polls the watcher broker's Metadata for the bench topic
// every rollingPoll until ctx ends.
func watchLeaders(ctx context.Context, cl *kgo.Client, watcher, down int32, exited <-chan struct{}, w *leaderWatch) {
	t := time.NewTicker(rollingPoll)
	defer t.Stop()
	for {
		md, err := rollingMetadata(ctx, cl, watcher)
		now := time.Now()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			w.pollFailed()
		} else {
			leaders := map[int32]int32{}
			for _, tp := range md.Topics {
				for _, p := range tp.Partitions {
					leaders[p.Partition] = p.Leader
				}
			}
			downExited := false
			select {
			case <-exited:
				downExited = true
			default:
			}
			w.observe(now, leaders, down, downExited)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// rollingMetadata asks one broker for the bench topic's metadata.
func rollingMetadata(ctx context.Context, cl *kgo.Client, broker int32) (*kmsg.MetadataResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(rollingTopic)
	req.Topics = append(req.Topics, t)
	return req.RequestWith(ctx, cl.Broker(int(broker)))
}
