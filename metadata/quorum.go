package metadata

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/kbroker/kbroker/metadata/features"
)

// A changeable voter set, as Kafka's KIP-853. The voters are raft's
// configuration, which raft keeps in the log itself (configuration
// entries, and the snapshots' metadata): a change is committed like a
// record and survives restarts on every node, and Config.Voters only
// seeds the configuration once, when a voter bootstraps an empty
// directory. The operations below run on the active controller; one
// change at a time (quorumMu, and raft refuses a change while another is
// uncommitted).

// QuorumReplica is one member of the metadata quorum as the active
// controller sees it. Offsets are raft log indexes: a replica's log end
// offset is the index of the last entry in its log and the quorum's high
// watermark is the commit index, so a replica holding everything
// committed shows LogEndOffset >= HighWatermark, as in Kafka.
type QuorumReplica struct {
	ID   int32  `json:"id"`
	Addr string `json:"addr"` // controller listener (raft transport) address
	// LogEndOffset is the last index of the replica's log as the replica
	// itself reported it when the controller asked (the leader: its
	// own); -1 when it did not answer within replicaProbeTimeout.
	LogEndOffset int64 `json:"logEndOffset"`
	// LastFetchTimestamp (ms since the epoch) is when the replica last
	// heard from the leader (raft's LastContact on the replica, which
	// hashicorp/raft updates on every AppendEntries, heartbeats
	// included); the leader's own is now. -1 unknown.
	LastFetchTimestamp int64 `json:"lastFetchTimestamp"`
	// LastCaughtUpTimestamp (ms) is the last time the controller, in its
	// current term, found the replica holding everything committed when
	// it asked; the leader's own is now. -1 unknown.
	LastCaughtUpTimestamp int64 `json:"lastCaughtUpTimestamp"`
}

// QuorumDescription is the state of the metadata quorum (Kafka's
// DescribeQuorum of __cluster_metadata-0).
type QuorumDescription struct {
	LeaderID      int32           `json:"leaderId"`
	LeaderEpoch   int32           `json:"leaderEpoch"`   // the raft term
	HighWatermark int64           `json:"highWatermark"` // the commit index
	Voters        []QuorumReplica `json:"voters"`        // sorted by id
	Observers     []QuorumReplica `json:"observers"`     // raft non-voters, sorted by id
}

// replicaProbeTimeout bounds the controller's question to one replica
// about its log. A replica that does not answer in time is reported with
// unknown offsets, not waited for.
const replicaProbeTimeout = time.Second

// DescribeQuorum describes the metadata quorum from the active
// controller's point of view (forwarded to it from any node).
func (s *Store) DescribeQuorum(ctx context.Context) (QuorumDescription, error) {
	return call(ctx, s, opDescribeQuorum, none{})
}

var opDescribeQuorum = defineOp("DescribeQuorum", nil,
	func(s *Store, ctx context.Context, _ none) (QuorumDescription, error) { return s.describeQuorum(ctx) })

// AddVoter makes node id a voter of the metadata quorum. The node must
// already follow the log as a non-voter (a node not in
// controller.quorum.voters joins as one when it starts) and hold
// everything committed; addr, when set, must be the address it joined
// at. It fails with ErrDuplicateVoter when id is a voter already, with
// ErrVoterNotReady when the node is not a non-voter or does not catch up
// before ctx ends.
func (s *Store) AddVoter(ctx context.Context, id int32, addr string) error {
	if id < 0 {
		return fmt.Errorf("%w: node id %d", ErrVoterChangeRefused, id)
	}
	_, err := call(ctx, s, opAddVoter, voterChange{ID: id, Addr: addr})
	return err
}

// RemoveVoter removes node id from the voters of the metadata quorum.
// Removing the active controller hands its leadership to another voter
// first; the new leader then removes it. The last voter, and a voter
// whose removal would leave fewer live voters than a majority of the
// rest, are refused (ErrVoterChangeRefused); a node that is not a voter
// fails with ErrVoterNotFound. A removed node that still runs follows
// the log as a non-voter, as a removed KRaft voter stays an observer.
func (s *Store) RemoveVoter(ctx context.Context, id int32) error {
	_, err := call(ctx, s, opRemoveVoter, voterChange{ID: id})
	return err
}

type voterChange struct {
	ID   int32  `json:"id"`
	Addr string `json:"addr,omitempty"`
}

var opAddVoter = defineOp("AddVoter", nil,
	func(s *Store, ctx context.Context, r voterChange) (none, error) { return none{}, s.addVoter(ctx, r) })

var opRemoveVoter = defineOp("RemoveVoter", nil,
	func(s *Store, ctx context.Context, r voterChange) (none, error) {
		return none{}, s.removeVoter(ctx, r.ID)
	})

// quorumState is what the active controller remembers between questions
// to the replicas: when each was last found caught up, in which term.
type quorumState struct {
	mu       sync.Mutex
	caughtUp map[int32]caughtUpAt
}

type caughtUpAt struct {
	term uint64
	at   time.Time
}

func (q *quorumState) noteCaughtUp(id int32, term uint64, at time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.caughtUp == nil {
		q.caughtUp = map[int32]caughtUpAt{}
	}
	q.caughtUp[id] = caughtUpAt{term: term, at: at}
}

// lastCaughtUp is the time noted for id in term, or zero.
func (q *quorumState) lastCaughtUp(id int32, term uint64) time.Time {
	q.mu.Lock()
	defer q.mu.Unlock()
	if c, ok := q.caughtUp[id]; ok && c.term == term {
		return c.at
	}
	return time.Time{}
}

// configuration is raft's latest configuration and the index it was
// written at.
func (s *Store) configuration(ctx context.Context) (raft.Configuration, uint64, error) {
	f := s.raft.GetConfiguration()
	if err := s.wait(ctx, f); err != nil {
		return raft.Configuration{}, 0, err
	}
	return f.Configuration(), f.Index(), nil
}

// nodeID parses a raft server id written by serverID.
func nodeID(id raft.ServerID) (int32, bool) {
	n, err := strconv.ParseInt(string(id), 10, 32)
	return int32(n), err == nil
}

func (s *Store) describeQuorum(ctx context.Context) (QuorumDescription, error) {
	if !s.IsController() {
		return QuorumDescription{}, ErrNotController
	}
	cf, _, err := s.configuration(ctx)
	if err != nil {
		return QuorumDescription{}, err
	}
	term := s.raft.CurrentTerm()
	commit := s.raft.CommitIndex()
	d := QuorumDescription{LeaderID: s.cfg.NodeID, LeaderEpoch: int32(term), HighWatermark: int64(commit)}
	probes := s.probeReplicas(ctx, cf.Servers)
	for _, srv := range cf.Servers {
		id, ok := nodeID(srv.ID)
		if !ok {
			continue
		}
		r := QuorumReplica{ID: id, Addr: string(srv.Address), LogEndOffset: -1, LastFetchTimestamp: -1, LastCaughtUpTimestamp: -1}
		if id == s.cfg.NodeID {
			now := time.Now().UnixMilli()
			r.Addr = s.advertise
			r.LogEndOffset = int64(s.raft.LastIndex())
			r.LastFetchTimestamp, r.LastCaughtUpTimestamp = now, now
		} else if p, ok := probes[id]; ok {
			r.LogEndOffset = int64(p.state.LastIndex)
			if p.state.LastContactMs > 0 {
				r.LastFetchTimestamp = p.state.LastContactMs
			}
			if p.state.LastIndex >= commit {
				s.quorum.noteCaughtUp(id, term, p.at)
			}
		}
		if at := s.quorum.lastCaughtUp(id, term); id != s.cfg.NodeID && !at.IsZero() {
			r.LastCaughtUpTimestamp = at.UnixMilli()
		}
		if srv.Suffrage == raft.Voter {
			d.Voters = append(d.Voters, r)
		} else {
			d.Observers = append(d.Observers, r)
		}
	}
	byID := func(a, b QuorumReplica) int { return int(a.ID) - int(b.ID) }
	slices.SortFunc(d.Voters, byID)
	slices.SortFunc(d.Observers, byID)
	// Leadership lost while asking: the answer would be a stale
	// leader's.
	if !s.IsController() || s.raft.CurrentTerm() != term {
		return QuorumDescription{}, ErrNotController
	}
	return d, nil
}

// replicaState is what a node answers about its own raft log.
type replicaState struct {
	LastIndex     uint64 `json:"lastIndex"`
	LastContactMs int64  `json:"lastContactMs"` // when it last heard from a leader; 0 never
	Term          uint64 `json:"term"`
	// Features: the levels the node supports (UpdateFeatures asks the
	// voters); absent from a build before feature levels.
	Features map[string]features.Range `json:"features,omitempty"`
}

// opReplicaState is answered by every node's controller listener, like
// opPing: the active controller asks it of each replica, since
// hashicorp/raft does not expose what the leader knows of its followers'
// logs.
const opReplicaState = "ReplicaState"

func init() {
	handlers[opReplicaState] = func(s *Store, _ context.Context, _ peerIdentity, _ json.RawMessage) (any, error) {
		st := replicaState{LastIndex: s.raft.LastIndex(), Term: s.raft.CurrentTerm(), Features: features.Supported()}
		if t := s.raft.LastContact(); !t.IsZero() {
			st.LastContactMs = t.UnixMilli()
		}
		return st, nil
	}
}

type probeResult struct {
	state replicaState
	at    time.Time // when the answer arrived
}

// probeReplicas asks every server but this node for its replicaState,
// concurrently, each bounded by replicaProbeTimeout, and returns the
// answers that came (by node id). It waits for every question it asked.
func (s *Store) probeReplicas(ctx context.Context, servers []raft.Server) map[int32]probeResult {
	var (
		mu  sync.Mutex
		out = map[int32]probeResult{}
		wg  sync.WaitGroup
	)
	for _, srv := range servers {
		id, ok := nodeID(srv.ID)
		if !ok || id == s.cfg.NodeID {
			continue
		}
		addr := s.controllerAddr(id)
		if addr == "" {
			addr = string(srv.Address)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := s.probeReplica(ctx, addr)
			if err != nil {
				s.log.Debug("quorum: replica did not answer", "node", id, "err", err)
				return
			}
			mu.Lock()
			out[id] = probeResult{state: st, at: time.Now()}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

func (s *Store) probeReplica(ctx context.Context, addr string) (replicaState, error) {
	ctx, cancel := context.WithTimeout(ctx, replicaProbeTimeout)
	defer cancel()
	raw, err := s.callRemote(ctx, addr, opReplicaState, []byte("{}"))
	if err != nil {
		return replicaState{}, err
	}
	var st replicaState
	if err := json.Unmarshal(raw, &st); err != nil {
		return replicaState{}, fmt.Errorf("metadata: %s: bad response: %w", opReplicaState, err)
	}
	return st, nil
}

// catchUpPoll is how often addVoter asks a new voter whether it holds
// everything committed.
const catchUpPoll = 100 * time.Millisecond

func (s *Store) addVoter(ctx context.Context, r voterChange) error {
	s.quorumMu.Lock()
	defer s.quorumMu.Unlock()
	if !s.IsController() {
		return ErrNotController
	}
	cf, index, err := s.configuration(ctx)
	if err != nil {
		return err
	}
	var cur *raft.Server
	for i := range cf.Servers {
		if cf.Servers[i].ID == serverID(r.ID) {
			cur = &cf.Servers[i]
		}
	}
	switch {
	case cur == nil:
		return fmt.Errorf("%w: node %d does not follow the metadata log: start it (with controller.quorum.voters naming the current voters) so that it joins as an observer first",
			ErrVoterNotReady, r.ID)
	case cur.Suffrage == raft.Voter:
		return fmt.Errorf("%w: node %d is already a voter", ErrDuplicateVoter, r.ID)
	case r.Addr != "" && r.Addr != string(cur.Address):
		return fmt.Errorf("%w: node %d follows the metadata log from %s, not %s", ErrVoterChangeRefused, r.ID, cur.Address, r.Addr)
	}
	// As Kafka: only a replica that holds the log up to the high
	// watermark may vote, so that adding it does not stall commits while
	// it catches up.
	target := s.raft.CommitIndex()
	addr := string(cur.Address)
	var last error
	for {
		st, err := s.probeReplica(ctx, addr)
		if err == nil && st.LastIndex >= target {
			break
		}
		last = err
		if err == nil {
			last = fmt.Errorf("log end offset %d, high watermark %d", st.LastIndex, target)
		}
		t := time.NewTimer(catchUpPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w: node %d has not caught up with the metadata log: %v (%w)", ErrVoterNotReady, r.ID, last, ctx.Err())
		case <-s.ctx.Done():
			t.Stop()
			return ErrClosed
		case <-t.C:
		}
	}
	// prevIndex: the change applies to the configuration checked above,
	// or fails.
	if err := s.wait(ctx, s.raft.AddVoter(cur.ID, cur.Address, index, enqueueTimeout(ctx))); err != nil {
		return voterChangeError(fmt.Sprintf("add voter %d", r.ID), err)
	}
	s.log.Info("added metadata quorum voter", "id", r.ID, "addr", cur.Address)
	return nil
}

func (s *Store) removeVoter(ctx context.Context, id int32) error {
	s.quorumMu.Lock()
	defer s.quorumMu.Unlock()
	if !s.IsController() {
		return ErrNotController
	}
	cf, index, err := s.configuration(ctx)
	if err != nil {
		return err
	}
	var remaining []raft.Server
	found := false
	for _, srv := range cf.Servers {
		switch {
		case srv.Suffrage != raft.Voter:
		case srv.ID == serverID(id):
			found = true
		default:
			remaining = append(remaining, srv)
		}
	}
	if !found {
		return fmt.Errorf("%w: node %d is not a voter", ErrVoterNotFound, id)
	}
	if len(remaining) == 0 {
		return fmt.Errorf("%w: node %d is the last voter of the metadata quorum", ErrVoterChangeRefused, id)
	}
	if id == s.cfg.NodeID {
		// Hand the leadership over first, as Kafka's leader resigns after
		// removing itself, but without the election in between: raft
		// transfers it to the most caught-up voter, and the caller's
		// retry reaches the new leader, which removes this node.
		if err := s.wait(ctx, s.raft.LeadershipTransfer()); err != nil {
			return voterChangeError(fmt.Sprintf("hand over leadership to remove voter %d", id), err)
		}
		s.log.Info("handed the leadership over to remove this node from the voters")
		return fmt.Errorf("%w: handed over the leadership to remove voter %d", ErrNotController, id)
	}
	// The remaining voters must be able to commit without it: a majority
	// of them must answer now (this node is one of them).
	live := 1 + len(s.probeReplicas(ctx, remaining)) // probeReplicas skips this node
	if need := len(remaining)/2 + 1; live < need {
		return fmt.Errorf("%w: removing voter %d would leave no quorum: %d of the %d remaining voters answer, %d needed",
			ErrVoterChangeRefused, id, live, len(remaining), need)
	}
	if err := s.wait(ctx, s.raft.RemoveServer(serverID(id), index, enqueueTimeout(ctx))); err != nil {
		return voterChangeError(fmt.Sprintf("remove voter %d", id), err)
	}
	s.log.Info("removed metadata quorum voter", "id", id)
	return nil
}

// voterChangeError maps raft's refusal of a configuration change: a
// change committed meanwhile (the prevIndex check) or one still
// uncommitted is Kafka's REQUEST_TIMED_OUT, "retry once the previous
// change is done".
func voterChangeError(what string, err error) error {
	if errors.Is(err, ErrNotController) || errors.Is(err, ErrClosed) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: %w", what, err)
	}
	return fmt.Errorf("%w: %s: %v", ErrVoterNotReady, what, err)
}

// isRaftVoter reports whether node id is a voter in raft's latest
// configuration.
func (s *Store) isRaftVoter(id int32) bool {
	f := s.raft.GetConfiguration()
	if f.Error() != nil {
		return false
	}
	for _, srv := range f.Configuration().Servers {
		if srv.ID == serverID(id) {
			return srv.Suffrage == raft.Voter
		}
	}
	return false
}

// ControllerAddr is the address other nodes reach this node's controller
// listener (and raft) at: the address it joins the quorum with.
func (s *Store) ControllerAddr() string { return s.advertise }
