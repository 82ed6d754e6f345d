package cluster

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/kbroker/kbroker/internal/monotime"
	"github.com/kbroker/kbroker/replication"
)

// brokerSession is this broker's own view of its session with the active
// controller: when a heartbeat last succeeded. The controller fences a
// broker whose heartbeats stop for broker.session.timeout.ms and moves its
// leaderships away; a broker cut off from the controller (isolated, or
// paused and resumed) cannot hear of that, so once its own heartbeats
// have failed for as long it assumes it is fenced and stops acting as a
// leader (Kafka's brokers likewise stop leading when their session is
// lost). Produces then get NOT_LEADER_OR_FOLLOWER at once, sending the
// client to refresh its metadata, instead of being appended to a log
// nobody replicates and held until the request times out.
type brokerSession struct {
	timeout time.Duration
	// lastOK is the monotonic instant (monotime) of the last successful
	// heartbeat, or of the heartbeat loop's start, so a step of the wall
	// clock neither loses nor prolongs the session; 0 means the loop has
	// not started (no session to lose: a controller-only node, or a node
	// still starting).
	lastOK atomic.Int64
	// lost is true while the session is considered lost, so the loss is
	// logged and acted upon once.
	lost atomic.Bool
}

// start begins the session clock: a broker that has just started gets a
// full session timeout to reach the controller.
func (s *brokerSession) start(now time.Time) { s.lastOK.Store(monotime.Of(now)) }

// renewed records a successful heartbeat. It reports whether the session
// had been lost.
func (s *brokerSession) renewed(now time.Time) (wasLost bool) {
	s.lastOK.Store(monotime.Of(now))
	return s.lost.Swap(false)
}

// expired reports whether heartbeats have failed for longer than the
// session timeout at now.
func (s *brokerSession) expired(now time.Time) bool {
	last := s.lastOK.Load()
	return s.timeout > 0 && last != 0 && now.Sub(monotime.Time(last)) > s.timeout
}

// checkLost marks the session lost if it expired; it reports whether this
// call made that transition.
func (s *brokerSession) checkLost(now time.Time) bool {
	return s.expired(now) && s.lost.CompareAndSwap(false, true)
}

// sessionLost reports whether this broker must not act as a leader
// because it has not reached the controller for a session timeout.
func (n *Node) sessionLost() bool { return n.session.expired(time.Now()) }

// leaderCheck refuses a leader operation while the session is lost with
// ErrNotLeader, so the client gets NOT_LEADER_OR_FOLLOWER and
// refreshes its metadata.
func (n *Node) leaderCheck() error {
	if n.sessionLost() {
		return replication.ErrNotLeader
	}
	return nil
}

// watchSession notices the moment the session expires, between
// heartbeats (a heartbeat attempt may itself block for two intervals),
// and completes the acks=all produces waiting on this broker's
// leaderships with NOT_LEADER_OR_FOLLOWER: their followers have been
// moved to another leader and will never fetch what they wait for.
func (n *Node) watchSession(ctx context.Context) {
	period := max(n.session.timeout/20, 50*time.Millisecond)
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if n.session.checkLost(now) {
				n.logger.Warn("no successful heartbeat for broker.session.timeout.ms; refusing to lead until the controller answers again",
					"timeout", n.session.timeout)
				n.wakeLeaderWaiters()
			}
		}
	}
}

// wakeLeaderWaiters re-checks the produces waiting on every partition this
// broker leads.
func (n *Node) wakeLeaderWaiters() {
	for _, p := range n.replicas.Partitions() {
		if p.IsLeader() {
			n.produceWaiters.Check(p.TP)
		}
	}
}
