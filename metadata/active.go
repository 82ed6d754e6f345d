package metadata

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/kbroker/kbroker/metadata/decisions"
)

// The active controller's background duties: broker sessions (fence a
// broker whose heartbeats stop) and preferred leader election. Both run in
// controllerLoop, one goroutine per Store started by Open and stopped by
// Close, which does nothing while this node is not the raft leader.

// sessions holds the last heartbeat of each broker, in memory on the active
// controller only. When a node becomes leader it resets them: every
// registered broker gets a full session from that moment.
type sessions struct {
	mu    sync.Mutex
	since time.Time // when this node became leader
	last  map[int32]time.Time
	// shutdown holds the epoch at which each broker asked for a
	// controlled shutdown (Kafka's wantShutdown): a heartbeat of that
	// epoch, perhaps already in flight, must not unfence it again.
	shutdown map[int32]int64
	// suspects are the brokers reported dead (ReportBrokerDead) while
	// their last heartbeat was recent, at the epoch and time of the
	// report.
	suspects map[int32]suspect
	// heardBefore holds brokers last heard from before since: the
	// previous controller, whose raft messages stopped then (see
	// suspectPrevController).
	heardBefore map[int32]time.Time
	// probing holds the brokers being pinged (probeSilent).
	probing map[int32]bool
}

// startProbe marks broker id as being pinged; false if it already is.
func (ss *sessions) startProbe(id int32) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.probing[id] {
		return false
	}
	if ss.probing == nil {
		ss.probing = map[int32]bool{}
	}
	ss.probing[id] = true
	return true
}

func (ss *sessions) endProbe(id int32) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.probing, id)
}

type suspect struct {
	epoch int64
	at    time.Time
}

// silence is how long the broker has not been heard from: since its last
// heartbeat or registration, or since this node became leader if later.
func (ss *sessions) silence(id int32, now time.Time) time.Duration {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return now.Sub(ss.lastHeard(id))
}

func (ss *sessions) lastHeard(id int32) time.Time {
	t := ss.since
	if b, ok := ss.heardBefore[id]; ok {
		t = b
	}
	if l, ok := ss.last[id]; ok && l.After(t) {
		t = l
	}
	return t
}

// suspect records a dead report about broker id at epoch. A later report
// replaces an earlier one: only a heartbeat after the latest report
// clears the suspicion.
func (ss *sessions) suspect(id int32, epoch int64, now time.Time) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.suspects == nil {
		ss.suspects = map[int32]suspect{}
	}
	ss.suspects[id] = suspect{epoch, now}
}

// dueSuspects returns the suspects of img to fence now: registered at the
// reported epoch, unfenced, and silent for grace. It forgets those that
// heartbeated after the report, or whose registration changed.
func (ss *sessions) dueSuspects(img *Image, now time.Time, grace time.Duration) []*Broker {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	var out []*Broker
	for id, sp := range ss.suspects {
		b, ok := img.Brokers[id]
		heard := ss.lastHeard(id)
		switch {
		case !ok || b.Fenced || b.Epoch != sp.epoch || heard.After(sp.at):
			delete(ss.suspects, id)
		case now.Sub(heard) >= grace:
			delete(ss.suspects, id)
			out = append(out, b)
		}
	}
	return out
}

// suspected reports whether broker id is a suspect (for tests).
func (ss *sessions) suspected(id int32) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	_, ok := ss.suspects[id]
	return ok
}

// markShutdown records that broker id at epoch is shutting down.
func (ss *sessions) markShutdown(id int32, epoch int64) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.shutdown == nil {
		ss.shutdown = map[int32]int64{}
	}
	ss.shutdown[id] = epoch
}

// shuttingDown reports whether broker id at epoch asked to shut down.
func (ss *sessions) shuttingDown(id int32, epoch int64) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	e, ok := ss.shutdown[id]
	return ok && e == epoch
}

func (ss *sessions) reset(now time.Time) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.since = now
	ss.last = map[int32]time.Time{}
	ss.suspects = nil // reports were made to the previous leader
	ss.heardBefore = nil
}

// heardAt records that broker id was last heard from at t, before this
// node became leader: its silence counts from t, not from since.
func (ss *sessions) heardAt(id int32, t time.Time) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if t.IsZero() || !t.Before(ss.since) {
		return
	}
	if ss.heardBefore == nil {
		ss.heardBefore = map[int32]time.Time{}
	}
	ss.heardBefore[id] = t
}

func (ss *sessions) beat(id int32, now time.Time) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.last == nil {
		ss.last = map[int32]time.Time{}
	}
	ss.last[id] = now
}

// expired returns the unfenced brokers of img whose last heartbeat (or the
// moment this node became leader, if later) is older than timeout.
func (ss *sessions) expired(img *Image, now time.Time, timeout time.Duration) []*Broker {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	var out []*Broker
	for _, id := range img.UnfencedBrokerIDs() {
		if now.Sub(ss.lastHeard(id)) > timeout {
			out = append(out, img.Brokers[id])
		}
	}
	return out
}

// controllerTick is how often controllerLoop looks at sessions and the
// leader balance.
func (c Config) controllerTick() time.Duration {
	d := 500 * time.Millisecond
	if c.SessionTimeout > 0 {
		d = min(d, c.SessionTimeout/10)
	}
	d = min(d, c.DeadReportGrace/4)
	if c.ProbeSilence > 0 {
		d = min(d, c.ProbeSilence/4)
	}
	if *c.AutoLeaderRebalance {
		d = min(d, c.LeaderImbalanceCheckInterval)
	}
	return max(d, 10*time.Millisecond)
}

// controllerLoop performs the active controller's duties while this node is
// the raft leader. On becoming leader it first waits for a barrier (so
// that its image holds every committed record) and resets the sessions.
func (s *Store) controllerLoop() {
	tick := time.NewTicker(s.cfg.controllerTick())
	defer tick.Stop()
	leading := false
	// prevController is the last other node seen leading: on taking over
	// it is suspected (below).
	prevController := int32(-1)
	// prevContact is when this node last heard from that leader.
	var prevContact time.Time
	var lastRebalance, lastTokenSweep time.Time
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
		}
		if s.raft.State() != raft.Leader {
			leading = false
			if id := s.ControllerID(); id >= 0 && id != s.cfg.NodeID {
				prevController = id
				prevContact = s.raft.LastContact()
			}
			continue
		}
		if !leading {
			ctx, cancel := context.WithTimeout(s.ctx, transportTimeout)
			err := s.wait(ctx, s.raft.Barrier(transportTimeout))
			cancel()
			if err != nil {
				continue
			}
			now := time.Now()
			s.sessions.reset(now)
			s.suspectPrevController(prevController, prevContact, now)
			lastRebalance = now
			leading = true
		}
		now := time.Now()
		if s.cfg.SessionTimeout > 0 {
			s.fenceExpired(now)
		}
		s.fenceSuspects(now)
		if s.cfg.ProbeSilence > 0 {
			s.probeSilent(now)
		}
		if now.Sub(lastTokenSweep) >= s.cfg.DelegationTokens.withDefaults().ExpiryCheckInterval {
			s.sweepExpiredTokens(now)
			lastTokenSweep = now
		}
		if *s.cfg.AutoLeaderRebalance && now.Sub(lastRebalance) >= s.cfg.LeaderImbalanceCheckInterval {
			s.electPreferredLeaders()
			lastRebalance = now
		}
	}
}

// suspectPrevController treats the node that led before this one as
// reported dead. The reset gives every broker a full session from now,
// and the gossip reports made while no controller was active were
// dropped, so a paused or isolated controller's broker would otherwise
// keep its leaderships for a whole new session timeout after the
// election, unreachable all that time. Its silence counts from
// lastContact, when this node last heard from it as raft leader: the
// election itself took a good part of DeadReportGrace, and the broker
// was as silent to the controller during it. A controller that merely
// lost leadership heartbeats within DeadReportGrace and stays unfenced,
// as after any mistaken report.
func (s *Store) suspectPrevController(id int32, lastContact, now time.Time) {
	if id < 0 || id == s.cfg.NodeID {
		return
	}
	b, ok := s.Image().Brokers[id]
	if !ok || b.Fenced {
		return // not a broker (controller-only node), or already fenced
	}
	s.sessions.heardAt(id, lastContact)
	s.sessions.suspect(id, b.Epoch, now)
}

// fenceExpired fences the brokers whose sessions expired.
func (s *Store) fenceExpired(now time.Time) {
	for _, b := range s.sessions.expired(s.Image(), now, s.cfg.SessionTimeout) {
		ctx, cancel := context.WithTimeout(s.ctx, transportTimeout)
		err := s.fenceBroker(ctx, b.ID, b.Epoch, true, false)
		cancel()
		if err != nil {
			s.log.Debug("fence broker after session timeout", "broker", b.ID, "err", err)
			continue
		}
		s.log.Info("fenced broker: session timed out", "broker", b.ID, "epoch", b.Epoch)
	}
}

// fenceSuspects fences the brokers reported dead that stayed silent for
// Config.DeadReportGrace since.
func (s *Store) fenceSuspects(now time.Time) {
	for _, b := range s.sessions.dueSuspects(s.Image(), now, s.cfg.DeadReportGrace) {
		ctx, cancel := context.WithTimeout(s.ctx, transportTimeout)
		err := s.fenceBroker(ctx, b.ID, b.Epoch, true, false)
		cancel()
		if err != nil {
			s.log.Debug("fence broker reported dead", "broker", b.ID, "err", err)
			continue
		}
		s.log.Info("fenced broker: reported dead and silent", "broker", b.ID, "epoch", b.Epoch)
	}
}

// electPreferredLeaders moves the leadership of every partition to its
// first replica when that replica is alive, in the ISR and not the leader.
func (s *Store) electPreferredLeaders() {
	img := s.Image()
	alive := aliveIn(img)
	ctx, cancel := context.WithTimeout(s.ctx, transportTimeout)
	defer cancel()
	var futures []raft.ApplyFuture
	for _, name := range img.SortedTopicNames() {
		t := img.Topics[name]
		for _, p := range t.Partitions {
			leader, ok := decisions.PreferredLeader(p, alive)
			if !ok {
				continue
			}
			f, err := s.start(ctx, recPartitionChange, &partitionChangeRecord{
				TopicID: t.ID, Partition: p.ID, Leader: leader, ISR: p.ISR,
				LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch,
			})
			if err != nil {
				return
			}
			futures = append(futures, f)
		}
	}
	for _, f := range futures {
		if _, err := s.finish(ctx, f); err != nil {
			s.log.Debug("preferred leader election", "err", err)
		}
	}
}

// joinLoop keeps this node in raft's configuration. A node that is not in
// it (a broker-only node starting, a voter removed while it runs) asks the
// active controller to add it as a raft non-voter, with backoff, so that
// it keeps receiving the log; a voter or non-voter that is in it checks
// again every joinCheckInterval. A node never adds itself as a voter:
// only AddVoter makes a voter, and a removed voter stays removed.
//
// A voter removed while it was down restarts with a log that still names
// it a voter; nobody sends it anything and its elections are refused. So
// a voter that has known no leader for Config.leaderlessRejoin asks the active
// controller (reached through the other voters) whether the quorum still
// counts it, and joins as a non-voter if not.
func (s *Store) joinLoop() {
	const minBackoff = 50 * time.Millisecond
	backoff := minBackoff
	var leaderless time.Time
	for {
		wait := joinCheckInterval
		if s.needsJoin(&leaderless) {
			ctx, cancel := context.WithTimeout(s.ctx, 2*transportTimeout)
			_, err := call(ctx, s, opAddNonvoter, addNonvoterRequest{ID: s.cfg.NodeID, Addr: s.advertise})
			cancel()
			if err != nil {
				s.log.Debug("join as non-voter", "err", err)
				wait = backoff
				backoff = min(2*backoff, 5*time.Second)
			} else {
				backoff = minBackoff
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-s.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

const (
	// joinCheckInterval is how often joinLoop looks at raft's
	// configuration once this node is in it.
	joinCheckInterval = time.Second
	// defaultLeaderlessRejoin is how long a voter goes without a leader
	// before it asks whether the quorum still counts it
	// (Config.leaderlessRejoin).
	defaultLeaderlessRejoin = 10 * time.Second
)

// needsJoin reports whether this node should ask to be added as a
// non-voter. leaderless is when this node, a voter by its own
// configuration, last started going without a leader (zero: it has one).
func (s *Store) needsJoin(leaderless *time.Time) bool {
	voter, member := s.membership()
	switch {
	case !member:
		return true
	case !voter:
		return false
	case s.ControllerID() >= 0:
		*leaderless = time.Time{}
		return false
	case leaderless.IsZero():
		*leaderless = time.Now()
		return false
	case time.Since(*leaderless) < s.cfg.leaderlessRejoin:
		return false
	}
	*leaderless = time.Now() // ask again only after another period
	ctx, cancel := context.WithTimeout(s.ctx, 2*replicaProbeTimeout+s.cfg.noLeaderWait)
	defer cancel()
	d, err := call(ctx, s, opDescribeQuorum, none{})
	if err != nil {
		return false
	}
	for _, r := range slices.Concat(d.Voters, d.Observers) {
		if r.ID == s.cfg.NodeID {
			return false
		}
	}
	s.log.Warn("the metadata quorum no longer counts this node (removed while it was down?): joining as a non-voter", "leader", d.LeaderID)
	return true
}

// membership reports whether raft's latest configuration, as this node
// knows it, holds this node as a voter (at any address: a voter's entry
// may be written as another name for it), or at all (a non-voter only at
// its current address, so that one that moved joins again).
func (s *Store) membership() (voter, member bool) {
	f := s.raft.GetConfiguration()
	if f.Error() != nil {
		return false, true // shutting down: nothing to join
	}
	for _, srv := range f.Configuration().Servers {
		if srv.ID != serverID(s.cfg.NodeID) {
			continue
		}
		if srv.Suffrage == raft.Voter {
			return true, true
		}
		return false, srv.Address == raft.ServerAddress(s.advertise)
	}
	return false, false
}

// inConfiguration reports whether raft's latest configuration holds this
// node (see membership).
func (s *Store) inConfiguration() bool {
	_, member := s.membership()
	return member
}
