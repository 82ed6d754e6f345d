package cluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/kbroker/kbroker/cluster/membership"
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
func (n *Node) heartbeatLoop(ctx context.Context) {
	interval := time.Duration(n.cfg.BrokerHeartbeatIntervalMs) * time.Millisecond
	t := time.NewTicker(interval)
	defer t.Stop()
	n.session.start(time.Now())
	for {
		hctx, cancel := context.WithTimeout(ctx, interval*2)
		fenced, err := n.store.Heartbeat(hctx, n.cfg.NodeID, n.brokerEpoch())
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			n.logger.Debug("heartbeat failed", "err", err)
		case fenced:
			n.logger.Info("broker is fenced; waiting for the controller to unfence it")
		default:
			if n.session.renewed(time.Now()) {
				n.logger.Info("heartbeat succeeded again; leading partitions as the metadata says")
			}
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return
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

// controlledShutdown asks the controller to move this broker's
// leaderships to other ISR members before the node stops, so clients see
// a leader change rather than a timeout.
func (n *Node) controlledShutdown() {
	if !n.cfg.ControlledShutdownEnable {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	start := time.Now()
	if err := n.store.ControlledShutdown(ctx, n.cfg.NodeID, n.brokerEpoch()); err != nil {
		n.logger.Warn("controlled shutdown failed; stopping anyway", "err", err)
		return
	}
	n.logger.Info("controlled shutdown: leaderships moved", "took", time.Since(start))
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
