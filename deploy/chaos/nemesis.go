package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/clustercheck"
	"github.com/kbroker/kbroker/internal/testutil"
)

// fault is one injected fault with its time span.
type fault struct {
	Kind  string
	Node  int32
	Start time.Time
	End   time.Time
	Note  string
	Err   string
	// LedParts is how many partitions of the topic the node led when the
	// fault began; Failover how long after Start the metadata showed a
	// new leader epoch for all of them (0: not within failoverWatch).
	LedParts int
	Led      []int32 // those partitions
	Failover time.Duration
}

// failoverWatch bounds how long after a fault's start the harness looks
// for the leadership change it causes.
const failoverWatch = 60 * time.Second

// nemesis injects faults into t, one or a few at a time, and records them.
type nemesis struct {
	t      target
	topic  string
	parts  int
	h      *history
	quiet  time.Duration
	out    func(format string, args ...any)
	rngMu  sync.Mutex
	rng    *rand.Rand
	mu     sync.Mutex
	busy   map[int32]bool
	faults []fault
	notes  []string

	// Failover watches (watchFailover) run under watchCtx.
	watchCtx  context.Context
	stopWatch context.CancelFunc
	watchers  sync.WaitGroup
}

func (n *nemesis) intn(k int) int {
	n.rngMu.Lock()
	defer n.rngMu.Unlock()
	return n.rng.IntN(k)
}

// between returns a random duration in [lo, hi].
func (n *nemesis) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(n.intn(int(hi-lo)/int(time.Millisecond)+1))*time.Millisecond
}

// reserve marks id busy unless it already is.
func (n *nemesis) reserve(id int32) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.busy[id] {
		return false
	}
	n.busy[id] = true
	return true
}

func (n *nemesis) release(id int32) {
	n.mu.Lock()
	delete(n.busy, id)
	n.mu.Unlock()
}

func (n *nemesis) note(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	n.mu.Lock()
	n.notes = append(n.notes, s)
	n.mu.Unlock()
	n.h.add(event{Time: time.Now(), Kind: "note", Err: s, Partition: -1, Offset: -1})
	n.out("note: %s", s)
}

// begin records the start of a fault on node.
func (n *nemesis) begin(kind string, node int32, note string) int {
	f := fault{Kind: kind, Node: node, Start: time.Now(), Note: note}
	n.h.add(event{Time: f.Start, Kind: "fault-start", Fault: kind, Node: node, Err: note, Partition: -1, Offset: -1})
	n.out("%s  fault %-15s node %d %s", f.Start.Format("15:04:05.000"), kind, node, note)
	n.mu.Lock()
	defer n.mu.Unlock()
	n.faults = append(n.faults, f)
	return len(n.faults) - 1
}

func (n *nemesis) end(i int, err error) {
	now := time.Now()
	n.mu.Lock()
	f := &n.faults[i]
	f.End = now
	start := f.Start
	if err != nil {
		f.Err = err.Error()
	}
	kind, node := f.Kind, f.Node
	n.mu.Unlock()
	e := event{Time: now, Kind: "fault-end", Fault: kind, Node: node, Partition: -1, Offset: -1}
	if err != nil {
		e.Err = err.Error()
		n.out("%s  end   %-15s node %d FAILED after %v: %v", now.Format("15:04:05.000"), kind, node, now.Sub(start).Round(time.Millisecond), err)
	} else {
		n.out("%s  end   %-15s node %d after %v", now.Format("15:04:05.000"), kind, node, now.Sub(start).Round(time.Millisecond))
	}
	n.h.add(e)
}

func (n *nemesis) snapshot() []fault {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.faults)
}

// leaderOf picks the leader of a random partition that is free to fault.
func (n *nemesis) leaderOf(ctx context.Context) (int32, int32, error) {
	m, err := anyMetadata(ctx, n.t)
	if err != nil {
		return 0, 0, err
	}
	ps := clustercheck.PartStates(m, n.topic)
	start := n.intn(n.parts)
	for k := range n.parts {
		p := int32((start + k) % n.parts)
		l := ps[p].Leader
		if l > 0 && n.t.running(l) && n.reserve(l) {
			return p, l, nil
		}
	}
	return 0, 0, fmt.Errorf("no free running leader")
}

// anyNode picks a random running node free to fault.
func (n *nemesis) anyNode() (int32, error) {
	ids := n.t.ids()
	start := n.intn(len(ids))
	for k := range ids {
		id := ids[(start+k)%len(ids)]
		if n.t.running(id) && n.reserve(id) {
			return id, nil
		}
	}
	return 0, fmt.Errorf("no free running node")
}

// inject runs one fault of kind to its end (the node restarted, resumed
// or reconnected). It returns false when no target was free.
func (n *nemesis) inject(ctx context.Context, kind string) bool {
	var (
		node int32
		note string
		err  error
		jump time.Duration // clock-jump
	)
	switch kind {
	case "kill-leader", "pause-leader":
		var p int32
		p, node, err = n.leaderOf(ctx)
		note = fmt.Sprintf("(leader of p%d)", p)
	case "kill-controller":
		md, e := anyMetadata(ctx, n.t)
		if e != nil {
			err = e
		} else {
			node = md.ControllerID
			if node <= 0 || !n.t.running(node) || !n.reserve(node) {
				err = fmt.Errorf("controller %d not free", node)
				node = 0
			}
		}
		note = "(active controller)"
	case "bounce", "isolate", "disk-full":
		node, err = n.anyNode()
	case "clock-jump":
		// Forwards or backwards, picked now for the fault's note.
		node, err = n.anyNode()
		jump = n.between(clockJumpMin, clockJumpMaxFwd)
		if n.intn(2) == 0 {
			jump = -n.between(clockJumpMin, clockJumpMaxBack)
		}
		note = fmt.Sprintf("(wall clock %+v)", jump)
	case "rolling-restart":
		var got []int32
		for _, id := range n.t.ids() {
			if !n.reserve(id) {
				for _, r := range got {
					n.release(r)
				}
				n.note("rolling-restart: node %d is busy", id)
				return false
			}
			got = append(got, id)
		}
		defer func() {
			for _, id := range n.t.ids() {
				n.release(id)
			}
		}()
	}
	if err != nil {
		n.note("%s: no target: %v", kind, err)
		return false
	}
	if node > 0 {
		defer n.release(node)
	}
	// What node led before the fault, for the server-side failover time.
	var before *kmsg.MetadataResponse
	if node > 0 {
		before, _ = anyMetadata(ctx, n.t)
	}
	i := n.begin(kind, node, note)
	n.watchFailover(i, node, before)
	err = n.act(ctx, kind, node, jump)
	n.end(i, err)
	return true
}

// watchFailover measures, in the background, the server-side side of a
// fault on node: the time from its start until a running node's metadata
// shows a higher leader epoch, with a leader, for every partition node led
// in before. It stops at the latest failoverWatch after the start, or at
// stopWatchers; the next fault does not wait for it.
func (n *nemesis) watchFailover(i int, node int32, before *kmsg.MetadataResponse) {
	led := map[int32]int32{} // partition -> leader epoch before
	if before != nil {
		for p, s := range clustercheck.PartStates(before, n.topic) {
			if s.Leader == node {
				led[p] = s.Epoch
			}
		}
	}
	n.mu.Lock()
	n.faults[i].LedParts = len(led)
	for p := range led {
		n.faults[i].Led = append(n.faults[i].Led, p)
	}
	start, kind := n.faults[i].Start, n.faults[i].Kind
	n.mu.Unlock()
	if len(led) == 0 || keepsLeadership(kind) {
		return
	}
	ctx := n.watchCtx
	n.watchers.Add(1)
	go func() {
		defer n.watchers.Done()
		err := testutil.Poll(ctx, failoverWatch-time.Since(start), func() error {
			m, err := anyMetadata(ctx, n.t)
			if err != nil {
				return err
			}
			ps := clustercheck.PartStates(m, n.topic)
			for p, epoch := range led {
				if s := ps[p]; s.Epoch <= epoch || s.Leader < 0 {
					return fmt.Errorf("p%d: leader %d epoch %d", p, s.Leader, s.Epoch)
				}
			}
			return nil
		})
		n.mu.Lock()
		f := &n.faults[i]
		if err == nil {
			f.Failover = time.Since(start)
		}
		failover := f.Failover
		n.mu.Unlock()
		if err == nil {
			n.out("%s  leader change after %-15s node %d: %v (%d partitions)", time.Now().Format("15:04:05.000"), kind, node, failover.Round(time.Millisecond), len(led))
		} else if ctx.Err() == nil {
			n.out("%s  no leader change after %s node %d: %v", time.Now().Format("15:04:05.000"), kind, node, err)
		}
	}()
}

// keepsLeadership says a fault kind leaves its node serving, so no
// leadership change is awaited (a clock jump).
func keepsLeadership(kind string) bool { return kind == "clock-jump" }

// stopWatchers ends the failover watches still running and waits for them.
func (n *nemesis) stopWatchers() {
	n.stopWatch()
	n.watchers.Wait()
}

// act injects kind on node and ends it; jump is clock-jump's offset.
func (n *nemesis) act(ctx context.Context, kind string, node int32, jump time.Duration) error {
	sleep := func(d time.Duration) {
		select {
		case <-ctx.Done():
		case <-time.After(d):
		}
	}
	switch kind {
	case "kill-leader", "kill-controller":
		if err := n.t.kill(node); err != nil {
			return err
		}
		sleep(n.between(time.Second, 4*time.Second))
		return n.t.restart(node)
	case "bounce":
		if err := n.t.term(node); err != nil {
			_ = n.t.restart(node)
			return err
		}
		sleep(n.between(500*time.Millisecond, 2*time.Second))
		return n.t.restart(node)
	case "pause-leader":
		if err := n.t.pause(node); err != nil {
			return err
		}
		// Longer than the session timeout: the controller must fence it.
		sleep(n.t.sessionTimeout() + n.between(2*time.Second, 4*time.Second))
		return n.t.resume(node)
	case "isolate":
		if err := n.t.isolate(node); err != nil {
			_ = n.t.reconnect(node)
			return err
		}
		sleep(n.t.sessionTimeout() + n.between(2*time.Second, 5*time.Second))
		return n.t.reconnect(node)
	case "disk-full":
		if err := n.t.fillDisk(node); err != nil {
			_ = n.t.freeDisk(node)
			if !n.t.running(node) {
				_ = n.t.restart(node)
			}
			return err
		}
		// The node's log dir goes offline and its Raft log write fails:
		// it stops by itself once it next writes (replication keeps it
		// writing). One that has not after a while is stopped.
		for wait := time.Now().Add(60 * time.Second); n.t.running(node) && time.Now().Before(wait); {
			sleep(200 * time.Millisecond)
		}
		stopped := !n.t.running(node)
		if !stopped {
			_ = n.t.term(node)
		}
		sleep(n.between(time.Second, 3*time.Second))
		if err := n.t.freeDisk(node); err != nil {
			return err
		}
		if err := n.t.restart(node); err != nil {
			return err
		}
		if !stopped {
			return fmt.Errorf("disk-full: node %d did not stop within 60s of its disk filling", node)
		}
		return nil
	case "clock-jump":
		// One jump (forwards or backwards), held, then back to the host's
		// time; the jumped node keeps serving throughout.
		if err := n.t.jumpClock(node, jump); err != nil {
			_ = n.t.jumpClock(node, 0)
			return err
		}
		sleep(n.between(5*time.Second, 20*time.Second))
		return n.t.jumpClock(node, 0)
	case "rolling-restart":
		for _, id := range n.t.ids() {
			if err := n.t.term(id); err != nil {
				_ = n.t.restart(id)
				return err
			}
			if err := n.t.restart(id); err != nil {
				return err
			}
			// Under-replicated = 0 on every node before the next one.
			if _, err := waitConverged(ctx, n.t, n.topic, 60*time.Second, healthy(n.t, n.topic, n.parts)); err != nil {
				return fmt.Errorf("after restarting node %d: under-replicated partitions remain: %w", id, err)
			}
		}
		return nil
	}
	return fmt.Errorf("unknown nemesis %q", kind)
}

// run injects every kind alone (in random order, even past the deadline),
// then random mixes of two until the deadline, with quiet periods.
func (n *nemesis) run(ctx context.Context, kinds []string, deadline time.Time) {
	waitHealthy := func(after string) {
		if _, err := waitConverged(ctx, n.t, n.topic, 60*time.Second, healthy(n.t, n.topic, n.parts)); err != nil && ctx.Err() == nil {
			n.note("cluster not healthy within 60s after %s: %v", after, err)
			_ = n.t.heal()
		}
	}
	quiet := func() {
		select {
		case <-ctx.Done():
		case <-time.After(n.quiet):
		}
	}
	n.rngMu.Lock()
	order := slices.Clone(kinds)
	n.rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	n.rngMu.Unlock()
	for _, k := range order {
		if ctx.Err() != nil {
			return
		}
		waitHealthy("the previous fault")
		n.inject(ctx, k)
		quiet()
	}
	var mixable []string
	for _, k := range kinds {
		if k != "rolling-restart" {
			mixable = append(mixable, k)
		}
	}
	for round := 0; round < 1000 && ctx.Err() == nil && time.Now().Before(deadline); round++ {
		waitHealthy("the previous fault")
		var mix []string
		if len(mixable) >= 2 && n.intn(3) > 0 {
			a := n.intn(len(mixable))
			b := (a + 1 + n.intn(len(mixable)-1)) % len(mixable)
			mix = []string{mixable[a], mixable[b]}
		} else {
			mix = []string{kinds[n.intn(len(kinds))]}
		}
		var wg sync.WaitGroup
		for j, k := range mix {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if j > 0 {
					time.Sleep(n.between(0, 2*time.Second))
				}
				n.inject(ctx, k)
			}()
		}
		wg.Wait()
		quiet()
	}
}
