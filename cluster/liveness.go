package cluster

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/membership"
	"github.com/kbroker/kbroker/internal/monotime"
	"github.com/kbroker/kbroker/metadata"
)

// brokerEpoch is this broker's epoch from its registration, as the image
// shows it.
func (n *Node) brokerEpoch() int64 {
	if b, ok := n.store.Image().Brokers[n.cfg.NodeID]; ok {
		return b.Epoch
	}
	return -1
}

// heartbeatLoop tells the active controller every
// broker.heartbeat.interval.ms that this broker is alive; the controller
// fences a broker whose heartbeats stop for broker.session.timeout.ms and
// unfences it when they resume.
func (n *Node) heartbeatLoop(ctx context.Context) { n.heartbeats(ctx, n.store) }

// heartbeatStore is what the heartbeat loop needs of the metadata store
// (a fake in tests).
type heartbeatStore interface {
	BrokerHeartbeat(ctx context.Context, brokerID int32, brokerEpoch int64) (metadata.HeartbeatResult, error)
	ReportOfflineReplicas(ctx context.Context, brokerID int32, epoch int64, partitions []metadata.TopicPartitions) (int, error)
	Image() *metadata.Image
	Changed() <-chan struct{}
}

func (n *Node) heartbeats(ctx context.Context, s heartbeatStore) {
	interval := time.Duration(n.cfg.BrokerHeartbeatIntervalMs) * time.Millisecond
	t := time.NewTicker(interval)
	defer t.Stop()
	n.session.start(time.Now())
	// pending is the controller's metadata offset of the oldest answered
	// heartbeat whose metadata this broker has not applied yet.
	// The session renews once the image reaches it: leading again only
	// with the controller's metadata applied, since a broker back from a
	// pause or a partition would otherwise serve, for a moment, the
	// leaderships it was fenced out of. The wait never delays the next
	// heartbeat: a broker applying a large image (a CreateTopics of
	// thousands of partitions) must keep telling the controller it is
	// alive, or a dead report (a follower's fetch timing out on it) finds
	// it silent past the grace and fences it. The oldest offset, not the
	// newest, so that renewal progresses while metadata keeps coming.
	var pending uint64
	havePending := false
	for {
		hctx, cancel := context.WithTimeout(ctx, interval*2)
		epoch := int64(-1)
		if b, ok := s.Image().Brokers[n.cfg.NodeID]; ok {
			epoch = b.Epoch
		}
		res, err := s.BrokerHeartbeat(hctx, n.cfg.NodeID, epoch)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			if n.session.expired(time.Now()) {
				n.logger.Info("heartbeat failed", "err", err)
			} else {
				n.logger.Debug("heartbeat failed", "err", err)
			}
		case res.Fenced:
			n.logger.Info("broker is fenced; waiting for the controller to unfence it")
		default:
			if !havePending {
				pending, havePending = res.MetadataOffset, true
			}
			n.reportOfflineReplicas(ctx, s, epoch, interval*2)
		}
		for wait := true; wait; {
			ch := s.Changed()
			if havePending && s.Image().Offset >= pending {
				havePending = false
				if n.session.renewed(time.Now()) {
					n.logger.Info("heartbeat succeeded again; leading partitions as the metadata says")
				}
			}
			select {
			case <-ch:
			case <-t.C:
				wait = false
			case <-n.offlineReport:
				// A log dir failed: heartbeat and report its replicas now,
				// so their leadership moves without waiting an interval.
				wait = false
			case <-ctx.Done():
				return
			}
		}
	}
}

// watchMembership reports brokers memberlist declares dead to the
// controller, which fences them at once rather than after the session
// timeout. Only the active controller acts, so one report is made per
// death; others would be redundant but harmless.
func (n *Node) watchMembership(ctx context.Context, m *membership.Membership) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-m.Events():
			if ev.Alive || ev.NodeID == n.cfg.NodeID || !n.store.IsController() {
				continue
			}
			b, ok := n.store.Image().Brokers[ev.NodeID]
			if !ok || b.Fenced {
				continue
			}
			n.logger.Info("memberlist reports broker dead; fencing it", "broker", ev.NodeID)
			rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			if err := n.store.ReportBrokerDead(rctx, ev.NodeID); err != nil {
				n.logger.Warn("fencing dead broker", "broker", ev.NodeID, "err", err)
			}
			cancel()
		}
	}
}

// reportInterval is the least time between two reports of one
// unreachable broker: a fetcher redials every 100ms to 1s, and one report
// is enough for the controller to check the broker itself.
const reportInterval = 500 * time.Millisecond

// leaderUnreachable is the replication hook for a leader whose
// connection broke or whose listener refused a fetcher's dial: it is
// marked for Metadata answers at once, and a refusal is reported to the
// controller. It never blocks the fetcher: a report that finds the queue
// full is dropped (the fetcher retries and reports again).
func (n *Node) leaderUnreachable(id int32, refused bool) {
	if b, ok := n.store.Image().Brokers[id]; ok {
		n.refusing.mark(id, b.Epoch, time.Now())
	}
	if !refused {
		return
	}
	select {
	case n.unreachable <- unreachableReport{id: id, refused: true}:
	default:
	}
}

// unreachableReport is one broker to report to the controller, and
// whether its listener refused a dial (rather than a connection of it
// dropping).
type unreachableReport struct {
	id      int32
	refused bool
}

// followerGone is told by the server that a follower's fetch connection
// was dropped by its peer. The follower is reported to the controller,
// which fences it at once only if its listeners refuse connections too.
// A dead follower holds back the high watermark of every partition
// whose ISR it is in (acks=all waits) until it is fenced, and a broker
// that leads nothing is noticed by no fetcher; its leaders notice it
// here. It is not marked for Metadata: a live follower closes its fetch
// connection whenever it stops following this broker.
func (n *Node) followerGone(id int32) {
	if id == n.cfg.NodeID {
		return
	}
	select {
	case n.unreachable <- unreachableReport{id: id}:
	default:
	}
}

// leaderReachable is the replication hook for a leader fetched from
// again: it is no longer marked.
func (n *Node) leaderReachable(id int32) { n.refusing.clear(id) }

// reportUnreachable reports brokers whose listeners refuse connections to
// the active controller as dead until ctx ends. The controller probes the
// broker's endpoints itself and fences it at once if they refuse it too:
// followers notice a killed leader within the fetcher's first redial
// (~100ms), while gossip needs its suspicion timeout (~2s) and the
// session timeout many seconds.
//
// Reports are paced per broker and kind: a killed process's connections
// drop a moment before its listener closes, so the controller's probe of
// a report on a dropped connection may still find it listening; the
// refused dial that follows must not wait out that report's interval.
func (n *Node) reportUnreachable(ctx context.Context) {
	last := make(map[unreachableReport]time.Time)
	for {
		var r unreachableReport
		select {
		case <-ctx.Done():
			return
		case r = <-n.unreachable:
		}
		if time.Since(last[r]) < reportInterval {
			continue
		}
		if b, ok := n.store.Image().Brokers[r.id]; !ok || b.Fenced {
			continue
		}
		last[r] = time.Now()
		n.logger.Info("broker unreachable; reporting it dead", "broker", r.id, "refused_dial", r.refused)
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if err := n.store.ReportBrokerDead(rctx, r.id); err != nil && ctx.Err() == nil {
			n.logger.Warn("reporting unreachable broker", "broker", r.id, "err", err)
		}
		cancel()
	}
}

// refusingFor is how long a refused connection keeps a broker's
// partitions answered as leaderless in Metadata. Fetchers redial a
// refusing leader at least every second, so a broker that stays down
// stays marked, and one that comes back is unmarked within this.
const refusingFor = 2 * time.Second

// refusingBrokers are the brokers, at their registered epoch, whose
// connection from one of this node's replica fetchers broke or whose
// listener refused it recently, with no successful fetch since: their
// process is likely gone, though the controller may not have fenced them
// yet (or no controller is elected: the controller itself was killed).
//
// Metadata answers their partitions LEADER_NOT_AVAILABLE (Kafka's answer
// for a leader that is not alive) instead of naming them leader. A client
// told the dead leader keeps sending to it and waits its metadata min age
// (5s in franz-go) before asking again; told LEADER_NOT_AVAILABLE it asks
// again every 250ms and sees the new leader as soon as the controller has
// fenced the dead one.
type refusingBrokers struct {
	mu    sync.Mutex
	marks map[int32]refusal
}

type refusal struct {
	epoch int64
	at    time.Time
}

func (r *refusingBrokers) mark(id int32, epoch int64, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.marks == nil {
		r.marks = make(map[int32]refusal)
	}
	r.marks[id] = refusal{epoch: epoch, at: now}
}

// any reports whether some broker is marked (a cheap check first).
func (r *refusingBrokers) any() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.marks) > 0
}

func (r *refusingBrokers) clear(id int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.marks, id)
}

// refuses reports whether broker id, registered at epoch, refused a
// connection within refusingFor of now. A new registration (a restart)
// has a new epoch and is not marked.
func (r *refusingBrokers) refuses(id int32, epoch int64, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	m, ok := r.marks[id]
	return ok && m.epoch == epoch && now.Sub(m.at) < refusingFor
}

// refusingLeader reports whether leader is an unfenced broker of img
// whose listener refused this node's fetcher recently.
func (n *Node) refusingLeader(img *metadata.Image, leader int32, now time.Time) bool {
	b, ok := img.Brokers[leader]
	return ok && !b.Fenced && n.refusing.refuses(leader, b.Epoch, now)
}

// maxFailoverWait bounds how long a Metadata request waits for the
// fencing of a leader whose connection broke: longer than a fencing
// after a controller election takes (~1s), well below clients' request
// timeouts.
const maxFailoverWait = 2 * time.Second

// awaitFailover returns the image to answer req from. While a partition
// it asks about is led by a broker marked in refusing (its connection
// broke, no fetch has worked since), it first waits, up to
// maxFailoverWait, for that to end: the controller fencing the broker
// and electing new leaders, or a fetcher reaching it again.
//
// A client asks for metadata right after losing a leader; answered with
// the dead leader it keeps sending there and (franz-go) asks again only
// after its metadata min age, 5s. When the controller died with the
// leader, fencing waits for a Raft election (~1s), which a client's
// first metadata request beats; held until then, it is answered with the
// new leaders.
func (n *Node) awaitFailover(ctx context.Context, req *kmsg.MetadataRequest) *metadata.Image {
	deadline := time.Now().Add(maxFailoverWait)
	if n.followsNamedLeader(n.store.Image(), req) {
		t := time.NewTimer(followerNotice)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	for {
		img := n.store.Image()
		now := time.Now()
		if !n.asksAboutRefusingLeader(img, req, now) || !now.Before(deadline) {
			return img
		}
		t := time.NewTimer(20 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return n.store.Image()
		case <-t.C:
		}
	}
}

// asksAboutRefusingLeader reports whether a topic req names (all topics
// for a nil list) has a partition led by a refusing broker.
func (n *Node) asksAboutRefusingLeader(img *metadata.Image, req *kmsg.MetadataRequest, now time.Time) bool {
	if !n.refusing.any() {
		return false
	}
	return anyNamedPartition(img, req, func(p *metadata.Partition) bool {
		return p.Leader >= 0 && n.refusingLeader(img, p.Leader, now)
	})
}

// followerNotice is how long a Metadata request naming a partition this
// node follows waits before it is answered. A client asks for metadata
// the moment its connection to a leader breaks, and this node's fetcher
// from that leader sees the same break at about the same moment (a
// killed process's sockets all close at once); answered first, the
// request would name the dead leader, and franz-go asks again only after
// its 5 s metadata min age. Held this long, the fetcher has marked the
// leader (leaderUnreachable) and awaitFailover waits for its fencing.
const followerNotice = 5 * time.Millisecond

// followsNamedLeader reports whether req names a partition this node
// follows (a replica, another broker leads it): one whose leader's death
// this node's fetcher would notice.
func (n *Node) followsNamedLeader(img *metadata.Image, req *kmsg.MetadataRequest) bool {
	self := n.cfg.NodeID
	return anyNamedPartition(img, req, func(p *metadata.Partition) bool {
		return p.Leader >= 0 && p.Leader != self && slices.Contains(p.Replicas, self)
	})
}

// anyNamedPartition reports whether pred holds for a partition of a topic
// req names (every topic for a nil list).
func anyNamedPartition(img *metadata.Image, req *kmsg.MetadataRequest, pred func(*metadata.Partition) bool) bool {
	match := func(t *metadata.Topic) bool {
		return t != nil && slices.ContainsFunc(t.Partitions, pred)
	}
	if req.Topics == nil {
		for _, t := range img.Topics {
			if match(t) {
				return true
			}
		}
		return false
	}
	for _, rt := range req.Topics {
		if rt.Topic != nil {
			if match(img.Topics[*rt.Topic]) {
				return true
			}
		} else if match(img.TopicsByID[rt.TopicID]) {
			return true
		}
	}
	return false
}

// controlledShutdown asks the controller to move this broker's
// leaderships to other ISR members before the node stops, so clients see
// a leader change rather than a timeout. It reports whether any of them
// moved to another broker (whether clients have somewhere to be sent).
func (n *Node) controlledShutdown() (moved bool) {
	if !n.cfg.ControlledShutdownEnable {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	start := time.Now()
	before := n.store.Image()
	if err := n.store.ControlledShutdown(ctx, n.cfg.NodeID, n.brokerEpoch()); err != nil {
		n.logger.Warn("controlled shutdown failed; stopping anyway", "err", err)
		return false
	}
	// The move is committed; answer from an image that holds it, so the
	// drain below tells clients the new leaders (KIP-951 hints) instead
	// of accepting writes as a leader the controller has replaced.
	if err := n.store.CatchUp(ctx); err != nil {
		n.logger.Warn("controlled shutdown: catching up with the metadata log", "err", err)
		return false
	}
	n.logger.Info("controlled shutdown: leaderships moved", "took", time.Since(start))
	return leadershipMoved(before, n.store.Image(), n.cfg.NodeID)
}

// leadershipMoved reports whether a partition broker led in before has
// another leader in after.
func leadershipMoved(before, after *metadata.Image, broker int32) bool {
	for name, t := range before.Topics {
		now := after.Topics[name]
		if now == nil {
			continue
		}
		for i, p := range t.Partitions {
			if p.Leader == broker && i < len(now.Partitions) && now.Partitions[i].Leader >= 0 && now.Partitions[i].Leader != broker {
				return true
			}
		}
	}
	return false
}

// Controlled shutdown drain: after its leaderships moved, a broker keeps
// answering until its clients have been told (NOT_LEADER_OR_FOLLOWER with
// the new leader) rather than closing their connections, which costs a
// client a metadata refresh it may pace for seconds (franz-go's metadata
// min age is 5 s). The drain lasts at least shutdownQuiet, goes on while
// this broker still points clients at other leaders (noteRedirect), and
// ends shutdownQuiet after the last such answer, or after shutdownDrainMax.
const (
	shutdownQuiet    = 200 * time.Millisecond
	shutdownDrainMax = 2 * time.Second
	shutdownPoll     = 20 * time.Millisecond
)

// noteRedirect records that a client was refused a partition another
// broker leads (it will move there).
func (n *Node) noteRedirect(leader int32) {
	if leader != n.cfg.NodeID {
		n.lastRedirect.Store(monotime.Now())
	}
}

// drainClients waits until clients stop being redirected after the
// leaderships moved.
func (n *Node) drainClients() {
	start := time.Now()
	t := time.NewTicker(shutdownPoll)
	defer t.Stop()
	for {
		now := time.Now()
		last := monotime.Time(n.lastRedirect.Load())
		if last.Before(start) {
			last = start
		}
		if now.Sub(last) >= shutdownQuiet || now.Sub(start) >= shutdownDrainMax {
			n.logger.Info("controlled shutdown: clients drained", "took", now.Sub(start))
			return
		}
		<-t.C
	}
}

// resignController hands the metadata quorum's leadership to another
// voter before this node stops, so the quorum does not wait out an
// election timeout without a controller (no ISR changes, no broker
// registrations meanwhile).
func (n *Node) resignController() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	switch resigned, err := n.store.Resign(ctx); {
	case err != nil:
		n.logger.Warn("handing over the controller before stopping", "err", err)
	case resigned:
		n.logger.Info("handed the controller over", "took", time.Since(start), "controller", n.store.ControllerID())
	}
}

// startMembership starts memberlist gossip (gossip.listener) and the
// watcher that turns its deaths into fencing; both stop with ctx.
func (n *Node) startMembership(ctx context.Context, wg *sync.WaitGroup) error {
	if n.cfg.GossipListener == "" {
		return nil
	}
	m, err := membership.New(membership.Config{
		NodeID:   n.cfg.NodeID,
		BindAddr: n.cfg.GossipListener,
		Seeds:    n.cfg.GossipSeeds,
		KeyFile:  n.cfg.GossipSecretKeyFile,
		Logger:   n.logger.With("component", "membership"),
		// Tighter than memberlist's LAN profile (1s probes, suspicion
		// ×4): a broker cluster is a handful of nodes on one network,
		// and a dead leader costs unavailability until it is noticed.
		// A false suspicion only moves leadership, which heartbeats undo.
		ProbeInterval: 500 * time.Millisecond,
		ProbeTimeout:  250 * time.Millisecond,
		SuspicionMult: 3,
	})
	if err != nil {
		return fmt.Errorf("gossip: %w", err)
	}
	if n.cfg.GossipSecretKeyFile == "" {
		n.logger.Warn("gossip is unauthenticated: anyone who reaches gossip.listener can join and spread liveness rumours; set gossip.secret.key.file")
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := m.Run(ctx); err != nil {
			n.logger.Error("membership stopped", "err", err)
		}
	}()
	go func() { defer wg.Done(); n.watchMembership(ctx, m) }()
	return nil
}

// reportOfflineReplicas tells the controller, with each heartbeat, about
// this broker's replicas that cannot open their logs while the metadata
// still has it as their leader or in their ISR, so that leadership moves
// to a replica that can serve (metadata offline_replicas.go).
func (n *Node) reportOfflineReplicas(ctx context.Context, s heartbeatStore, brokerEpoch int64, timeout time.Duration) {
	img := s.Image()
	var report []metadata.TopicPartitions
	for _, tp := range n.replicas.OfflineReplicas() {
		p, ok := img.Partition(tp.Topic, tp.Partition)
		if !ok || (p.Leader != n.cfg.NodeID && !slices.Contains(p.ISR, n.cfg.NodeID)) {
			continue
		}
		if k := len(report) - 1; k >= 0 && report[k].Topic == tp.Topic {
			report[k].Partitions = append(report[k].Partitions, tp.Partition)
			continue
		}
		report = append(report, metadata.TopicPartitions{Topic: tp.Topic, Partitions: []int32{tp.Partition}})
	}
	if len(report) == 0 {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	changed, err := s.ReportOfflineReplicas(rctx, n.cfg.NodeID, brokerEpoch, report)
	if err != nil {
		n.logger.Warn("reporting offline replicas to the controller", "partitions", len(report), "err", err)
		return
	}
	if changed > 0 {
		n.logger.Info("controller moved partitions away from this broker's offline replicas", "partitions", changed)
	}
}

// nodeLiveness answers the handlers' liveness questions (kafkaapi.Liveness)
// from the node's session and refusing brokers.
type nodeLiveness struct{ n *Node }

func (l nodeLiveness) LeaderCheck() error        { return l.n.leaderCheck() }
func (l nodeLiveness) SessionLost() bool         { return l.n.sessionLost() }
func (l nodeLiveness) AnyRefusing() bool         { return l.n.refusing.any() }
func (l nodeLiveness) NoteRedirect(leader int32) { l.n.noteRedirect(leader) }

func (l nodeLiveness) RefusingLeader(img *metadata.Image, leader int32, now time.Time) bool {
	return l.n.refusingLeader(img, leader, now)
}

func (l nodeLiveness) AwaitFailover(ctx context.Context, req *kmsg.MetadataRequest) *metadata.Image {
	return l.n.awaitFailover(ctx, req)
}
