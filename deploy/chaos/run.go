package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kbroker/kbroker/internal/clustercheck"
	"github.com/kbroker/kbroker/internal/testutil"
)

// result is the outcome of one run.
type result struct {
	violations int
	setupErr   error
	skipped    string
	report     *report
}

func (r result) exitCode() int {
	switch {
	case r.setupErr != nil:
		return 2
	case r.violations > 0:
		return 1
	}
	return 0
}

func run(ctx context.Context, cfg *config) (res result) {
	began := time.Now()
	// Nemeses and failover watches log from their own goroutines.
	var outMu sync.Mutex
	logf := func(format string, args ...any) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Fprintf(cfg.out, "chaos: "+format+"\n", args...)
	}
	fail := func(err error) result {
		logf("setup failed: %v", err)
		return result{setupErr: err}
	}
	if cfg.target == "compose" {
		if why := dockerAvailable(); why != "" {
			logf("skipping the compose target: %s", why)
			return result{skipped: why}
		}
	}
	work, err := os.MkdirTemp("", "kbroker-chaos-")
	if err != nil {
		return fail(err)
	}
	keep := cfg.keep
	defer func() {
		if !keep {
			// A broker that was slow to exit may still create files.
			_ = testutil.Poll(context.Background(), 2*time.Second, func() error { return os.RemoveAll(work) })
		}
	}()
	histPath := cfg.history
	if histPath == "" {
		histPath = filepath.Join(work, "history.jsonl")
	}
	h, err := newHistory(histPath)
	if err != nil {
		return fail(err)
	}
	// The full run closes the history itself and reports a failed write
	// among the report's problems. A run that ends early closes it here:
	// a history that lost events must not look like a complete one.
	defer func() {
		if err := h.close(); err != nil && res.report == nil {
			logf("history %s: %v", histPath, err)
			res.setupErr = errors.Join(res.setupErr, fmt.Errorf("history %s: %w", histPath, err))
		}
	}()
	logf("seed %d, target %s, security %s, duration %v, work dir %s, history %s", cfg.seed, cfg.target, cfg.security, cfg.duration, work, histPath)

	var t target
	switch cfg.target {
	case "subprocess":
		var pt *procTarget
		if pt, err = newProcTarget(cfg.kbroker, work, cfg.security); err == nil {
			pt.diskFull = contains(cfg.nemeses, "disk-full")
			t = pt
		}
	case "compose":
		var ct *composeTarget
		if ct, err = newComposeTarget(cfg.composeFile, cfg.network, work); err == nil {
			ct.diskFull = contains(cfg.nemeses, "disk-full")
			t = ct
		}
	}
	if err != nil {
		return fail(err)
	}
	// The target outlives an interrupt: healing needs it.
	bg := context.Background()
	closed := false
	closeTarget := func() {
		if !closed {
			closed = true
			t.close()
		}
	}
	defer closeTarget()
	if err := t.start(bg); err != nil {
		keep = true
		return fail(err)
	}
	ep := endpoint{seeds: t.seeds(), sec: t.security()}
	topic := fmt.Sprintf("chaos-%d", uint64(cfg.seed)%1_000_000_000)
	if err := createTopic(bg, ep, topic, cfg.partitions); err != nil {
		keep = true
		return fail(err)
	}
	if _, err := waitConverged(bg, t, topic, 60*time.Second, healthy(t, topic, cfg.partitions)); err != nil {
		keep = true
		return fail(fmt.Errorf("topic %s not led with a full ISR: %w", topic, err))
	}
	txnTopic := fmt.Sprintf("chaos-txn-%d", uint64(cfg.seed)%1_000_000_000)
	if cfg.txnProducers > 0 {
		if err := createTopic(bg, ep, txnTopic, cfg.partitions); err != nil {
			keep = true
			return fail(err)
		}
		if _, err := waitConverged(bg, t, txnTopic, 60*time.Second, healthy(t, txnTopic, cfg.partitions)); err != nil {
			keep = true
			return fail(fmt.Errorf("topic %s not led with a full ISR: %w", txnTopic, err))
		}
	}
	eosOn := cfg.txnProducers > 0 && cfg.eos
	eosTopic := fmt.Sprintf("chaos-eos-%d", uint64(cfg.seed)%1_000_000_000)
	eosGroup := fmt.Sprintf("chaos-eos-group-%d", uint64(cfg.seed)%1_000_000_000)
	if eosOn {
		if err := createTopic(bg, ep, eosTopic, cfg.partitions); err != nil {
			keep = true
			return fail(err)
		}
		if _, err := waitConverged(bg, t, eosTopic, 60*time.Second, healthy(t, eosTopic, cfg.partitions)); err != nil {
			keep = true
			return fail(fmt.Errorf("topic %s not led with a full ISR: %w", eosTopic, err))
		}
	}
	logf("cluster up, topic %s with %d partitions, RF 3, min.insync.replicas 2", topic, cfg.partitions)
	if cfg.txnProducers > 0 {
		logf("%d transactional producers on topic %s (%d partitions, RF 3, min.insync.replicas 2)", cfg.txnProducers, txnTopic, cfg.partitions)
	}
	if eosOn {
		logf("eos pipeline: group %s copies %s to %s in transactions", eosGroup, txnTopic, eosTopic)
	}

	rep := &report{target: t.name(), seed: fmt.Sprint(cfg.seed), producers: cfg.producers,
		faultCount: map[string]int{}, faultFailed: map[string]int{}, skipped: map[string]string{}, history: histPath}

	// Workload.
	rd := newReads()
	stopProd, stopCons := make(chan struct{}), make(chan struct{})
	var prodWG, consWG sync.WaitGroup
	var errMu sync.Mutex
	var workErrs []string
	workErr := func(err error) {
		if err != nil {
			errMu.Lock()
			workErrs = append(workErrs, err.Error())
			errMu.Unlock()
		}
	}
	for i := range cfg.producers {
		prodWG.Add(1)
		go func() {
			defer prodWG.Done()
			workErr(runProducer(i, ep, topic, cfg.rate, h, stopProd, func(time.Time) {}))
		}()
	}
	// The transactional workload on its own topic.
	tr, lso := newTxnReads(), &lsoStats{}
	for i := range cfg.txnProducers {
		prodWG.Add(1)
		go func() {
			defer prodWG.Done()
			txnID := fmt.Sprintf("chaos-%d-%d", uint64(cfg.seed)%1_000_000_000, i)
			workErr(runTxnProducer(i, txnID, ep, txnTopic, cfg.partitions, cfg.seed, h, stopProd))
		}()
	}
	if cfg.txnProducers > 0 {
		consWG.Add(2)
		go func() {
			defer consWG.Done()
			workErr(runTxnConsumer(ep, txnTopic, cfg.partitions, tr, stopCons))
		}()
		go func() {
			defer consWG.Done()
			workErr(runLSOSampler(ep, txnTopic, time.Second, lso, stopCons))
		}()
	}
	es := &eosStats{}
	stopEOS := make(chan struct{})
	var eosWG sync.WaitGroup
	if eosOn {
		eosWG.Add(1)
		go func() {
			defer eosWG.Done()
			txnID := fmt.Sprintf("chaos-%d-eos", uint64(cfg.seed)%1_000_000_000)
			workErr(runEOS(ep, txnTopic, eosTopic, eosGroup, txnID, es, stopEOS))
		}()
	}
	stopEOSOnce := sync.OnceFunc(func() { close(stopEOS) })
	defer func() {
		stopEOSOnce()
		waitGroup(&eosWG, 30*time.Second)
	}()
	var sessions, reReads int
	consWG.Add(1)
	go func() {
		defer consWG.Done()
		n, err := runAssignConsumer(ep, topic, cfg.partitions, rd, stopCons, 20*time.Second, &reReads)
		sessions = n
		workErr(err)
	}()
	group := fmt.Sprintf("chaos-group-%d", uint64(cfg.seed)%1_000_000_000)
	gs := &groupStats{}
	groupWhy := groupSupport(ep)
	if groupWhy == "" {
		consWG.Add(1)
		go func() {
			defer consWG.Done()
			workErr(runGroupConsumer(ep, topic, group, rd, gs, stopCons))
		}()
	} else {
		logf("group consumer: unsupported (%s)", groupWhy)
	}

	// Faults.
	nem := &nemesis{t: t, topic: topic, parts: cfg.partitions, h: h, quiet: cfg.quiet,
		out: logf, rng: rand.New(rand.NewPCG(uint64(cfg.seed), 0x6b62726f6b6572)), busy: map[int32]bool{}}
	nem.watchCtx, nem.stopWatch = context.WithCancel(bg)
	defer nem.stopWatchers()
	var kinds []string
	for _, k := range cfg.nemeses {
		why := ""
		switch k {
		case "isolate":
			why = t.isolateSupport()
		case "disk-full":
			why = t.diskFullSupport()
		case "clock-jump":
			why = t.clockJumpSupport()
		}
		if why != "" {
			rep.skipped[k] = why
			continue
		}
		kinds = append(kinds, k)
	}
	for _, k := range append(slices.Clone(allNemeses), extraNemeses...) {
		if _, ok := rep.skipped[k]; !ok && !contains(cfg.nemeses, k) {
			rep.skipped[k] = "not selected (--nemeses)"
		}
	}
	select {
	case <-ctx.Done():
	case <-time.After(cfg.quiet):
	}
	if len(kinds) > 0 {
		nem.run(ctx, kinds, began.Add(cfg.duration))
	} else {
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(began.Add(cfg.duration))):
		}
	}
	faultsEnd := time.Now()

	// Heal, stop the producers, let the consumers catch up.
	logf("healing")
	if err := t.heal(); err != nil {
		rep.problems = append(rep.problems, err.Error())
	}
	if _, err := waitConverged(bg, t, topic, 90*time.Second, healthy(t, topic, cfg.partitions)); err != nil {
		rep.problems = append(rep.problems, fmt.Sprintf("cluster did not heal within 90s (all nodes up, every partition led with a full ISR): %v", err))
	}
	if cfg.txnProducers > 0 {
		if _, err := waitConverged(bg, t, txnTopic, 30*time.Second, healthy(t, txnTopic, cfg.partitions)); err != nil {
			rep.problems = append(rep.problems, fmt.Sprintf("topic %s not healed within 30s: %v", txnTopic, err))
		}
	}
	logf("stopping producers")
	producersStopped := time.Now()
	close(stopProd)
	if !waitGroup(&prodWG, 150*time.Second) {
		rep.problems = append(rep.problems, "producers did not stop within 150s")
	}
	if ends, err := endOffsets(bg, ep, topic); err == nil {
		// Best effort: a consumer still behind reads less, checks less.
		_ = testutil.Poll(bg, 20*time.Second, func() bool { return rd.caughtUp(ends) })
	}
	close(stopCons)
	if !waitGroup(&consWG, 60*time.Second) {
		rep.problems = append(rep.problems, "consumers did not stop within 60s")
	}

	// Final state.
	if _, err := waitConverged(bg, t, topic, 60*time.Second, healthy(t, topic, cfg.partitions)); err != nil {
		rep.problems = append(rep.problems, fmt.Sprintf("cluster not healthy before the final read: %v", err))
	}
	ends, err := endOffsets(bg, ep, topic)
	if err != nil {
		rep.problems = append(rep.problems, fmt.Sprintf("final end offsets: %v", err))
		ends = map[int32]int64{}
	}
	logf("final read of %d partitions, end offsets %v", len(ends), ends)
	rctx, rcancel := context.WithTimeout(bg, 90*time.Second)
	final, err := clustercheck.ReadAll(rctx, ep.seeds, topic, ends, ep.sec...)
	rcancel()
	if err != nil {
		rep.problems = append(rep.problems, "final read: "+err.Error())
	}
	for _, rs := range final {
		for _, r := range rs {
			rd.add("final read", r.Partition, r.Offset, r.Value)
		}
	}
	rep.incons += compareReplicas(t, topic, ends, rep)
	var txnFinal, eosFinal map[int32][]clustercheck.Record
	var txnSentinels map[int32]string
	if cfg.txnProducers > 0 {
		// Transactions a stopped producer left open are aborted by their
		// coordinator after the transaction timeout: the read waits for it.
		readBegan := time.Now()
		rctx, rcancel := context.WithTimeout(bg, 90*time.Second)
		txnFinal, txnSentinels, err = readCommitted(rctx, ep, txnTopic, cfg.partitions)
		rcancel()
		if err != nil {
			rep.problems = append(rep.problems, "final read_committed read: "+err.Error())
		}
		txnEnds, err := endOffsets(bg, ep, txnTopic)
		if err != nil {
			rep.problems = append(rep.problems, fmt.Sprintf("final end offsets of %s: %v", txnTopic, err))
		} else {
			rep.incons += compareReplicas(t, txnTopic, txnEnds, rep)
		}
		logf("final read_committed read of %s and its replica comparison took %v", txnTopic, time.Since(readBegan).Round(time.Millisecond))
		if eosOn && txnEnds != nil {
			// The pipeline copies the sentinels too: when the group has
			// committed past them, it has copied everything.
			readBegan = time.Now()
			if err := eosCaughtUp(bg, ep, eosGroup, txnTopic, txnEnds, 60*time.Second); err != nil {
				rep.problems = append(rep.problems, err.Error())
			}
			stopEOSOnce()
			if !waitGroup(&eosWG, 60*time.Second) {
				rep.problems = append(rep.problems, "eos pipeline did not stop within 60s")
			}
			rctx, rcancel := context.WithTimeout(bg, 90*time.Second)
			eosFinal, _, err = readCommitted(rctx, ep, eosTopic, cfg.partitions)
			rcancel()
			if err != nil {
				rep.problems = append(rep.problems, "final read_committed read: "+err.Error())
			}
			logf("eos pipeline caught up, stopped and read in %v", time.Since(readBegan).Round(time.Millisecond))
		}
	}

	if groupWhy == "" {
		rep.group = fmt.Sprintf("%d assignments, %d records", gs.assigned, gs.records)
		if e := gs.errSummary(); e != "" {
			rep.group += " (errors" + e + ")"
		}
		rep.incons += checkCommitted(ep, group, topic, ends, rep)
	} else {
		rep.group = "unsupported (" + groupWhy + ")"
	}
	rep.consumerSessions, rep.reReads = sessions, reReads
	errMu.Lock()
	for _, e := range workErrs {
		rep.notes = append(rep.notes, "workload: "+e)
	}
	errMu.Unlock()

	closeTarget()
	rep.problems = append(rep.problems, t.problems()...)
	nem.stopWatchers()
	faults := nem.snapshot()
	for _, f := range faults {
		rep.faultCount[f.Kind]++
		if f.Err != "" {
			rep.faultFailed[f.Kind]++
			rep.notes = append(rep.notes, fmt.Sprintf("fault %s on node %d at %s: %s", f.Kind, f.Node, f.Start.Format("15:04:05"), f.Err))
		}
	}
	rep.notes = append(rep.notes, nem.notes...)
	for _, k := range kinds {
		if rep.faultCount[k] == 0 {
			rep.problems = append(rep.problems, fmt.Sprintf("nemesis %s was never injected", k))
		}
	}
	sends := h.snapshot()
	rep.gaps = clientGaps(sends, faults, producersStopped)
	rep.failover = failovers(faults)
	rep.check(sends, rd, final, ends)
	if cfg.txnProducers > 0 {
		rep.txn = &txnReport{producers: cfg.txnProducers}
		rep.txn.check(h.txnSnapshot(), tr, txnFinal, lso)
		if eosOn {
			rep.txn.checkEOS(txnFinal, txnSentinels, eosFinal, es)
		}
		for _, e := range rep.txn.examples {
			rep.example("%s", e)
		}
		rep.notes = append(rep.notes, rep.txn.notes...)
	}
	if err := h.close(); err != nil {
		rep.problems = append(rep.problems, "history: "+err.Error())
	}
	rep.took = fmt.Sprintf("%v of faults, %v in all", faultsEnd.Sub(began).Round(time.Second), time.Since(began).Round(time.Second))
	rep.print(cfg.out)
	v := rep.violations()
	if v > 0 {
		keep = true
		logf("work dir kept: %s", work)
	}
	return result{violations: v, report: rep}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func waitGroup(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// endOffsets lists the high watermark of every partition of topic.
func endOffsets(ctx context.Context, ep endpoint, topic string) (map[int32]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return clustercheck.EndOffsets(ctx, ep.seeds, topic, ep.sec...)
}

func createTopic(ctx context.Context, ep endpoint, topic string, parts int) error {
	cl, err := kgo.NewClient(ep.opts(kgo.DialTimeout(2 * time.Second))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	two := "2"
	res, err := kadm.NewClient(cl).CreateTopic(ctx, int32(parts), 3, map[string]*string{"min.insync.replicas": &two}, topic)
	if err != nil {
		return fmt.Errorf("create %s: %w", topic, err)
	}
	if res.Err != nil {
		return fmt.Errorf("create %s: %w (%s)", topic, res.Err, res.ErrMessage)
	}
	return nil
}

// compareReplicas checks that every node holds byte-identical segment
// bytes up to each partition's high watermark; it returns the mismatches.
func compareReplicas(t target, topic string, ends map[int32]int64, rep *report) int {
	bad := 0
	for _, p := range sortedPartitions(ends) {
		hw := ends[p]
		note := ""
		// Followers may still be fetching the last batches: poll.
		err := testutil.Poll(context.Background(), 30*time.Second, func() error {
			logs, n, err := t.replicaLogs(topic, p, hw)
			if note = n; err != nil || note != "" {
				return err
			}
			return clustercheck.CompareReplicas(logs, p, hw)
		})
		if note != "" {
			rep.notes = append(rep.notes, note)
			return 0
		}
		if err != nil {
			bad++
			rep.example("replicas: %v", err)
		}
	}
	return bad
}

func sortedPartitions(ends map[int32]int64) []int32 {
	var parts []int32
	for p := range ends {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	return parts
}

// checkCommitted checks that the group's committed offsets are within
// each partition's log.
func checkCommitted(ep endpoint, group, topic string, ends map[int32]int64, rep *report) int {
	cl, err := kgo.NewClient(ep.opts(kgo.DialTimeout(2 * time.Second))...)
	if err != nil {
		rep.notes = append(rep.notes, "group offsets: "+err.Error())
		return 0
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	offs, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
	if err != nil {
		rep.notes = append(rep.notes, "group offsets: "+err.Error())
		return 0
	}
	bad := 0
	n := 0
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic != topic {
			return
		}
		n++
		if o.Err == nil && o.At > ends[o.Partition] {
			bad++
			rep.example("group %s committed p%d at %d, past the end offset %d", group, o.Partition, o.At, ends[o.Partition])
		}
	})
	rep.group += fmt.Sprintf(", %d partitions committed", n)
	return bad
}
