package group

import (
	"crypto/rand"
	"encoding/hex"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// State is a group's state.
type State int8

const (
	Empty State = iota
	PreparingRebalance
	CompletingRebalance
	Stable
	Dead
)

// String returns the name Kafka uses in DescribeGroups and ListGroups.
func (s State) String() string {
	switch s {
	case Empty:
		return "Empty"
	case PreparingRebalance:
		return "PreparingRebalance"
	case CompletingRebalance:
		return "CompletingRebalance"
	case Stable:
		return "Stable"
	case Dead:
		return "Dead"
	}
	return "Unknown"
}

// Session timeout bounds: Kafka's group.min.session.timeout.ms and
// group.max.session.timeout.ms defaults.
const (
	MinSessionTimeout = 6 * time.Second
	MaxSessionTimeout = 30 * time.Minute
)

// Protocol is one assignment protocol a member supports, with its
// metadata (the subscription, for consumers).
type Protocol struct {
	Name     string
	Metadata []byte
}

// Member is one member of a group.
type Member struct {
	ID               string
	InstanceID       string // "" = dynamic member
	ClientID         string
	ClientHost       string
	ProtocolType     string
	Protocols        []Protocol
	SessionTimeout   time.Duration
	RebalanceTimeout time.Duration
	Assignment       []byte

	// heartbeatDeadline is when the session expires without a heartbeat.
	heartbeatDeadline time.Time
	joinRespond       func(JoinResult)
	syncRespond       func(SyncResult)
}

// Metadata returns the member's metadata for protocol name.
func (m *Member) Metadata(name string) []byte {
	for _, p := range m.Protocols {
		if p.Name == name {
			return p.Metadata
		}
	}
	return nil
}

// JoinRequest is a JoinGroup request for one group.
type JoinRequest struct {
	MemberID         string
	InstanceID       string // "" = none
	ClientID         string
	ClientHost       string
	ProtocolType     string
	Protocols        []Protocol
	SessionTimeout   time.Duration
	RebalanceTimeout time.Duration
	// RequireKnownMemberID is set from JoinGroup v4 (KIP-394): a new
	// dynamic member first gets MEMBER_ID_REQUIRED and its id.
	RequireKnownMemberID bool
}

// JoinResult is a JoinGroup answer. Members is filled for the leader.
type JoinResult struct {
	Err            error // nil or a *kerr.Error
	Generation     int32
	ProtocolType   string
	Protocol       string
	LeaderID       string
	MemberID       string
	SkipAssignment bool
	Members        []JoinedMember
}

// JoinedMember is one member as the leader sees it in its JoinResult.
type JoinedMember struct {
	MemberID   string
	InstanceID string
	Metadata   []byte
}

// SyncResult is a SyncGroup answer.
type SyncResult struct {
	Err          error
	ProtocolType string
	Protocol     string
	Assignment   []byte
}

// Offset is a committed offset.
type Offset struct {
	Offset          int64
	LeaderEpoch     int32
	Metadata        string
	CommitTimestamp int64 // unix ms
}

// TopicPartition names a partition in offsets.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Group is one classic group.
type Group struct {
	ID             string
	state          State
	protocolType   string
	protocol       string
	generation     int32
	leader         string
	members        map[string]*Member
	order          []string             // member ids in join order (leader choice, determinism)
	static         map[string]string    // instance id -> member id
	pending        map[string]time.Time // KIP-394 ids handed out, until this deadline
	stateTimestamp time.Time

	// The rebalance under way.
	rebalanceDeadline time.Time
	// initialDelay is set while the first rebalance of an empty group
	// waits for more members (group.initial.rebalance.delay.ms).
	initialDelay     bool
	initialStep      time.Duration
	initialRemaining time.Duration
	newMemberAdded   bool
	// dirty is set when the group changed outside a sync in a way its
	// metadata record must show (it became Empty; a static member got a
	// new member id), until TakeDirty reads it.
	dirty bool

	// InitialRebalanceDelay is group.initial.rebalance.delay.ms.
	InitialRebalanceDelay time.Duration

	Offsets map[TopicPartition]Offset

	// consumer is set for a consumer (KIP-848) group (consumer_group.go).
	consumer *Consumer

	// newID makes member ids; tests may replace it.
	newID func(prefix string) string
}

// New returns an Empty group.
func New(id string, initialDelay time.Duration, now time.Time) *Group {
	return &Group{
		ID:                    id,
		state:                 Empty,
		members:               map[string]*Member{},
		static:                map[string]string{},
		pending:               map[string]time.Time{},
		Offsets:               map[TopicPartition]Offset{},
		InitialRebalanceDelay: initialDelay,
		stateTimestamp:        now,
		newID:                 randomID,
	}
}

// SetIDGenerator replaces the member id generator (tests).
func (g *Group) SetIDGenerator(f func(prefix string) string) { g.newID = f }

func randomID(prefix string) string {
	var b [16]byte
	rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return prefix + "-" + h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// State returns the group's state.
func (g *Group) State() State { return g.state }

// Generation returns the generation id.
func (g *Group) Generation() int32 { return g.generation }

// ProtocolType returns the protocol type ("consumer" for consumers).
func (g *Group) ProtocolType() string { return g.protocolType }

// Protocol returns the selected protocol of the current generation.
func (g *Group) Protocol() string { return g.protocol }

// Leader returns the leader's member id.
func (g *Group) Leader() string { return g.leader }

// StateTimestamp is when the group last changed state.
func (g *Group) StateTimestamp() time.Time { return g.stateTimestamp }

// Members returns the members in join order.
func (g *Group) Members() []*Member {
	out := make([]*Member, 0, len(g.order))
	for _, id := range g.order {
		out = append(out, g.members[id])
	}
	return out
}

// Member returns a member by id.
func (g *Group) Member(id string) (*Member, bool) {
	m, ok := g.members[id]
	return m, ok
}

// TakeDirty reports whether the group changed since the last call in a
// way its metadata record must show (it became Empty, or a static member
// was replaced without a rebalance): the caller writes MetadataValue.
func (g *Group) TakeDirty() bool {
	b := g.dirty
	g.dirty = false
	return b
}

// HasMembers reports whether the group has members.
func (g *Group) HasMembers() bool { return len(g.members) > 0 }

func (g *Group) transition(s State, now time.Time) {
	g.state = s
	g.stateTimestamp = now
}

// Join handles a JoinGroup. respond is called exactly once, now or later.
func (g *Group) Join(req JoinRequest, now time.Time, respond func(JoinResult)) {
	fail := func(err *kerr.Error) {
		respond(JoinResult{Err: err, MemberID: req.MemberID, Generation: -1})
	}
	switch {
	case g.state == Dead:
		// The group is being removed: the client looks up the coordinator again.
		fail(kerr.CoordinatorNotAvailable)
		return
	case req.SessionTimeout < MinSessionTimeout || req.SessionTimeout > MaxSessionTimeout:
		fail(kerr.InvalidSessionTimeout)
		return
	case !g.supportsProtocols(req.ProtocolType, req.Protocols):
		fail(kerr.InconsistentGroupProtocol)
		return
	}
	if req.RebalanceTimeout <= 0 {
		req.RebalanceTimeout = req.SessionTimeout // v0
	}
	if req.MemberID == "" {
		g.joinUnknown(req, now, respond)
		return
	}
	g.joinKnown(req, now, respond)
}

func (g *Group) joinUnknown(req JoinRequest, now time.Time, respond func(JoinResult)) {
	prefix := req.ClientID
	if req.InstanceID != "" {
		prefix = req.InstanceID
	}
	newID := g.newID(prefix)
	if req.InstanceID != "" {
		if oldID, ok := g.static[req.InstanceID]; ok {
			g.replaceStatic(oldID, newID, req, now, respond)
			return
		}
		g.addAndRebalance(newID, req, now, respond)
		return
	}
	if req.RequireKnownMemberID {
		g.pending[newID] = now.Add(req.SessionTimeout)
		respond(JoinResult{Err: kerr.MemberIDRequired, MemberID: newID, Generation: -1})
		return
	}
	g.addAndRebalance(newID, req, now, respond)
}

// replaceStatic is KIP-345's rejoin of a known static member with an
// unknown member id: the new id replaces the old one; the old one is
// fenced (its pending responses get FENCED_INSTANCE_ID).
func (g *Group) replaceStatic(oldID, newID string, req JoinRequest, now time.Time, respond func(JoinResult)) {
	old := g.members[oldID]
	if old.joinRespond != nil {
		old.joinRespond(JoinResult{Err: kerr.FencedInstanceID, MemberID: oldID, Generation: -1})
		old.joinRespond = nil
	}
	if old.syncRespond != nil {
		old.syncRespond(SyncResult{Err: kerr.FencedInstanceID})
		old.syncRespond = nil
	}
	m := old
	delete(g.members, oldID)
	m.ID = newID
	g.members[newID] = m
	g.order[slices.Index(g.order, oldID)] = newID
	g.static[req.InstanceID] = newID
	wasLeader := g.leader == oldID
	if wasLeader {
		g.leader = newID
	}
	sameProtocols := protocolsEqual(m.Protocols, req.Protocols)
	m.ClientID, m.ClientHost = req.ClientID, req.ClientHost
	m.SessionTimeout, m.RebalanceTimeout = req.SessionTimeout, req.RebalanceTimeout
	m.heartbeatDeadline = now.Add(m.SessionTimeout)
	switch g.state {
	case Stable:
		if !sameProtocols {
			m.Protocols = req.Protocols
			m.joinRespond = respond
			g.prepareRebalance(now)
			return
		}
		// No rebalance: the member gets the current generation; a leader
		// is told to skip the assignment (v9) and gets the members.
		res := JoinResult{Generation: g.generation, ProtocolType: g.protocolType, Protocol: g.protocol,
			LeaderID: g.leader, MemberID: newID}
		if wasLeader {
			res.Members = g.joinedMembers()
			res.SkipAssignment = true
		}
		g.dirty = true
		respond(res)
	case CompletingRebalance:
		// Kafka rebalances again so the new id is part of the assignment.
		m.Protocols = req.Protocols
		m.joinRespond = respond
		g.prepareRebalance(now)
	default: // PreparingRebalance
		m.Protocols = req.Protocols
		m.joinRespond = respond
		g.tryCompleteJoin(now)
	}
}

func (g *Group) joinKnown(req JoinRequest, now time.Time, respond func(JoinResult)) {
	if _, ok := g.pending[req.MemberID]; ok {
		delete(g.pending, req.MemberID)
		g.addAndRebalance(req.MemberID, req, now, respond)
		return
	}
	m, err := g.currentMember(req.MemberID, req.InstanceID)
	if err != nil {
		respond(JoinResult{Err: err, MemberID: req.MemberID, Generation: -1})
		return
	}
	switch g.state {
	case PreparingRebalance:
		g.updateMember(m, req, now, respond)
		g.tryCompleteJoin(now)
	case CompletingRebalance:
		if protocolsEqual(m.Protocols, req.Protocols) {
			// A retried join: answer the current generation again.
			res := JoinResult{Generation: g.generation, ProtocolType: g.protocolType, Protocol: g.protocol,
				LeaderID: g.leader, MemberID: m.ID}
			if m.ID == g.leader {
				res.Members = g.joinedMembers()
			}
			respond(res)
			return
		}
		g.updateMember(m, req, now, respond)
		g.prepareRebalance(now)
	case Stable:
		if m.ID == g.leader || !protocolsEqual(m.Protocols, req.Protocols) {
			// The leader rejoining (a metadata change it saw) or a changed
			// subscription forces a rebalance.
			g.updateMember(m, req, now, respond)
			g.prepareRebalance(now)
			return
		}
		respond(JoinResult{Generation: g.generation, ProtocolType: g.protocolType, Protocol: g.protocol,
			LeaderID: g.leader, MemberID: m.ID})
	default: // Empty: it has no members, so currentMember failed already.
		respond(JoinResult{Err: kerr.UnknownMemberID, MemberID: req.MemberID, Generation: -1})
	}
}

// currentMember finds a member, checking a static member's instance id
// (FENCED_INSTANCE_ID when the instance now belongs to another member id).
func (g *Group) currentMember(memberID, instanceID string) (*Member, error) {
	if instanceID != "" {
		if cur, ok := g.static[instanceID]; ok && cur != memberID {
			return nil, kerr.FencedInstanceID
		}
	}
	m, ok := g.members[memberID]
	if !ok {
		return nil, kerr.UnknownMemberID
	}
	if m.InstanceID != "" && instanceID != "" && m.InstanceID != instanceID {
		return nil, kerr.FencedInstanceID
	}
	return m, nil
}

func (g *Group) updateMember(m *Member, req JoinRequest, now time.Time, respond func(JoinResult)) {
	m.Protocols = req.Protocols
	m.ClientID, m.ClientHost = req.ClientID, req.ClientHost
	m.SessionTimeout, m.RebalanceTimeout = req.SessionTimeout, req.RebalanceTimeout
	if m.joinRespond != nil {
		// A duplicate join in flight: the older one is superseded.
		m.joinRespond(JoinResult{Err: kerr.UnknownMemberID, MemberID: m.ID, Generation: -1})
	}
	m.joinRespond = respond
	m.heartbeatDeadline = now.Add(m.SessionTimeout)
}

func (g *Group) addAndRebalance(id string, req JoinRequest, now time.Time, respond func(JoinResult)) {
	m := &Member{
		ID: id, InstanceID: req.InstanceID, ClientID: req.ClientID, ClientHost: req.ClientHost,
		ProtocolType: req.ProtocolType, Protocols: req.Protocols,
		SessionTimeout: req.SessionTimeout, RebalanceTimeout: req.RebalanceTimeout,
		heartbeatDeadline: now.Add(req.SessionTimeout),
		joinRespond:       respond,
	}
	if len(g.members) == 0 {
		g.protocolType = req.ProtocolType
	}
	g.members[id] = m
	g.order = append(g.order, id)
	if m.InstanceID != "" {
		g.static[m.InstanceID] = id
	}
	if g.leader == "" {
		g.leader = id
	}
	g.newMemberAdded = true
	if g.state == PreparingRebalance {
		g.tryCompleteJoin(now)
		return
	}
	g.prepareRebalance(now)
}

// prepareRebalance moves the group to PreparingRebalance. Members waiting
// for a sync are told REBALANCE_IN_PROGRESS.
func (g *Group) prepareRebalance(now time.Time) {
	if g.state == CompletingRebalance {
		for _, m := range g.members {
			m.Assignment = nil
			if m.syncRespond != nil {
				m.syncRespond(SyncResult{Err: kerr.RebalanceInProgress})
				m.syncRespond = nil
			}
		}
	}
	timeout := g.rebalanceTimeout()
	if g.state == Empty && g.InitialRebalanceDelay > 0 {
		g.initialDelay = true
		g.initialStep = g.InitialRebalanceDelay
		delay := min(g.initialStep, timeout)
		g.initialRemaining = max(timeout-delay, 0)
		g.rebalanceDeadline = now.Add(delay)
		g.newMemberAdded = false
	} else {
		g.initialDelay = false
		g.rebalanceDeadline = now.Add(timeout)
	}
	g.transition(PreparingRebalance, now)
	g.tryCompleteJoin(now)
}

func (g *Group) rebalanceTimeout() time.Duration {
	var t time.Duration
	for _, m := range g.members {
		t = max(t, m.RebalanceTimeout)
	}
	return t
}

// tryCompleteJoin completes the join phase once every member has joined
// and no KIP-394 member is pending (never during the initial delay).
func (g *Group) tryCompleteJoin(now time.Time) {
	if g.state != PreparingRebalance || g.initialDelay {
		return
	}
	if len(g.pending) > 0 {
		return
	}
	for _, m := range g.members {
		if m.joinRespond == nil {
			return
		}
	}
	g.completeJoin(now)
}

func (g *Group) completeJoin(now time.Time) {
	// Dynamic members that did not rejoin in time are dropped; static
	// ones stay (KIP-345) and get the assignment the leader makes.
	for _, id := range slices.Clone(g.order) {
		if m := g.members[id]; m.joinRespond == nil && m.InstanceID == "" {
			g.removeMember(id)
		}
	}
	g.initialDelay = false
	g.generation++
	if len(g.members) == 0 {
		// Kafka's initNextGeneration clears the protocol but keeps the
		// protocol type: an Empty consumer group still shows "consumer"
		// in DescribeGroups and ListGroups, and in its metadata record.
		g.protocol = ""
		g.leader = ""
		g.transition(Empty, now)
		g.dirty = true
		return
	}
	if _, ok := g.members[g.leader]; !ok || g.members[g.leader].joinRespond == nil {
		for _, id := range g.order {
			if g.members[id].joinRespond != nil {
				g.leader = id
				break
			}
		}
	}
	g.protocol = g.selectProtocol()
	g.transition(CompletingRebalance, now)
	all := g.joinedMembers()
	for _, id := range g.order {
		m := g.members[id]
		m.heartbeatDeadline = now.Add(m.SessionTimeout)
		if m.joinRespond == nil {
			continue
		}
		res := JoinResult{Generation: g.generation, ProtocolType: g.protocolType, Protocol: g.protocol,
			LeaderID: g.leader, MemberID: id}
		if id == g.leader {
			res.Members = all
		}
		m.joinRespond(res)
		m.joinRespond = nil
	}
}

func (g *Group) joinedMembers() []JoinedMember {
	out := make([]JoinedMember, 0, len(g.order))
	for _, id := range g.order {
		m := g.members[id]
		out = append(out, JoinedMember{MemberID: id, InstanceID: m.InstanceID, Metadata: m.Metadata(g.protocol)})
	}
	return out
}

// candidates are the protocols every member supports, in the order of
// the first member's preference.
func (g *Group) candidates() []string {
	if len(g.order) == 0 {
		return nil
	}
	var out []string
	for _, p := range g.members[g.order[0]].Protocols {
		all := true
		for _, m := range g.members {
			if !hasProtocol(m.Protocols, p.Name) {
				all = false
				break
			}
		}
		if all && !slices.Contains(out, p.Name) {
			out = append(out, p.Name)
		}
	}
	return out
}

// selectProtocol is Kafka's vote: each member votes for its most preferred
// protocol that all members support; the most votes win (ties go to the
// first candidate in the first member's order).
func (g *Group) selectProtocol() string {
	cands := g.candidates()
	votes := map[string]int{}
	for _, m := range g.members {
		for _, p := range m.Protocols {
			if slices.Contains(cands, p.Name) {
				votes[p.Name]++
				break
			}
		}
	}
	best, bestVotes := "", -1
	for _, c := range cands {
		if votes[c] > bestVotes {
			best, bestVotes = c, votes[c]
		}
	}
	return best
}

func hasProtocol(ps []Protocol, name string) bool {
	return slices.ContainsFunc(ps, func(p Protocol) bool { return p.Name == name })
}

// supportsProtocols is Kafka's check that a joining member fits the group.
func (g *Group) supportsProtocols(protocolType string, ps []Protocol) bool {
	if protocolType == "" || len(ps) == 0 {
		return false
	}
	if len(g.members) == 0 {
		return true
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, p := range ps {
		all := true
		for _, m := range g.members {
			if !hasProtocol(m.Protocols, p.Name) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

func protocolsEqual(a, b []Protocol) bool {
	return slices.EqualFunc(a, b, func(x, y Protocol) bool {
		return x.Name == y.Name && string(x.Metadata) == string(y.Metadata)
	})
}

func (g *Group) removeMember(id string) {
	m, ok := g.members[id]
	if !ok {
		return
	}
	delete(g.members, id)
	g.order = slices.DeleteFunc(g.order, func(s string) bool { return s == id })
	if m.InstanceID != "" && g.static[m.InstanceID] == id {
		delete(g.static, m.InstanceID)
	}
	if g.leader == id {
		g.leader = ""
		if len(g.order) > 0 {
			g.leader = g.order[0]
		}
	}
}

// removeAndUpdate removes a member and moves the group on, as Kafka's
// removeMemberAndUpdateGroup does.
func (g *Group) removeAndUpdate(id string, now time.Time) {
	m := g.members[id]
	if m != nil && m.joinRespond != nil {
		m.joinRespond(JoinResult{Err: kerr.UnknownMemberID, MemberID: id, Generation: -1})
	}
	if m != nil && m.syncRespond != nil {
		m.syncRespond(SyncResult{Err: kerr.UnknownMemberID})
	}
	g.removeMember(id)
	switch g.state {
	case Stable, CompletingRebalance:
		g.prepareRebalance(now)
	case PreparingRebalance:
		g.tryCompleteJoin(now)
	}
}

// SyncRequest is a SyncGroup request.
type SyncRequest struct {
	MemberID     string
	InstanceID   string
	Generation   int32
	ProtocolType *string // v5+
	Protocol     *string // v5+
	Assignments  map[string][]byte
}

// Sync handles a SyncGroup. If the group asks for persistence (the
// leader's assignment), persist is true: the caller writes Snapshot and
// calls AssignmentStored with the generation when done; respond is called
// then (or earlier on an error).
func (g *Group) Sync(req SyncRequest, now time.Time, respond func(SyncResult)) (persist bool) {
	if g.state == Dead {
		respond(SyncResult{Err: kerr.CoordinatorNotAvailable})
		return false
	}
	m, err := g.currentMember(req.MemberID, req.InstanceID)
	if err != nil {
		respond(SyncResult{Err: err})
		return false
	}
	if req.Generation != g.generation {
		respond(SyncResult{Err: kerr.IllegalGeneration})
		return false
	}
	if (req.ProtocolType != nil && *req.ProtocolType != g.protocolType) ||
		(req.Protocol != nil && *req.Protocol != g.protocol) {
		respond(SyncResult{Err: kerr.InconsistentGroupProtocol})
		return false
	}
	switch g.state {
	case PreparingRebalance:
		respond(SyncResult{Err: kerr.RebalanceInProgress})
		return false
	case Stable:
		m.heartbeatDeadline = now.Add(m.SessionTimeout)
		respond(SyncResult{ProtocolType: g.protocolType, Protocol: g.protocol, Assignment: m.Assignment})
		return false
	case CompletingRebalance:
		if m.syncRespond != nil {
			m.syncRespond(SyncResult{Err: kerr.RebalanceInProgress})
		}
		m.syncRespond = respond
		m.heartbeatDeadline = now.Add(m.SessionTimeout)
		if m.ID != g.leader {
			return false
		}
		for _, om := range g.members {
			om.Assignment = req.Assignments[om.ID]
		}
		return true
	}
	respond(SyncResult{Err: kerr.UnknownMemberID}) // Empty
	return false
}

// AssignmentStored completes the sync of generation once its group
// metadata is replicated (err nil) or failed to be (err: the Kafka error
// for the members, and the group rebalances again).
func (g *Group) AssignmentStored(generation int32, err error, now time.Time) {
	if g.state != CompletingRebalance || g.generation != generation {
		return
	}
	if err != nil {
		for _, m := range g.members {
			m.Assignment = nil
			if m.syncRespond != nil {
				m.syncRespond(SyncResult{Err: err})
				m.syncRespond = nil
			}
		}
		g.prepareRebalance(now)
		return
	}
	g.transition(Stable, now)
	for _, m := range g.members {
		m.heartbeatDeadline = now.Add(m.SessionTimeout)
		if m.syncRespond != nil {
			m.syncRespond(SyncResult{ProtocolType: g.protocolType, Protocol: g.protocol, Assignment: m.Assignment})
			m.syncRespond = nil
		}
	}
}

// Heartbeat handles a Heartbeat.
func (g *Group) Heartbeat(memberID, instanceID string, generation int32, now time.Time) error {
	if g.state == Dead {
		return kerr.CoordinatorNotAvailable
	}
	m, err := g.currentMember(memberID, instanceID)
	if err != nil {
		return err
	}
	if generation != g.generation {
		return kerr.IllegalGeneration
	}
	m.heartbeatDeadline = now.Add(m.SessionTimeout)
	switch g.state {
	case PreparingRebalance:
		return kerr.RebalanceInProgress
	case Empty:
		return kerr.UnknownMemberID
	}
	return nil
}

// LeaveMember is one member leaving.
type LeaveMember struct {
	MemberID   string
	InstanceID string
}

// Leave handles a LeaveGroup; it returns one error per member.
func (g *Group) Leave(members []LeaveMember, now time.Time) []error {
	errs := make([]error, len(members))
	for i, lm := range members {
		if g.state == Dead {
			errs[i] = kerr.CoordinatorNotAvailable
			continue
		}
		id := lm.MemberID
		if lm.InstanceID != "" {
			cur, ok := g.static[lm.InstanceID]
			switch {
			case !ok:
				errs[i] = kerr.UnknownMemberID
				continue
			case id != "" && cur != id:
				errs[i] = kerr.FencedInstanceID
				continue
			}
			id = cur
		}
		if _, ok := g.pending[id]; ok {
			delete(g.pending, id)
			g.tryCompleteJoin(now)
			continue
		}
		if _, ok := g.members[id]; !ok {
			errs[i] = kerr.UnknownMemberID
			continue
		}
		g.removeAndUpdate(id, now)
	}
	return errs
}

// Tick expires sessions, pending members and rebalance timeouts due at
// now.
func (g *Group) Tick(now time.Time) {
	if g.state == Dead {
		return
	}
	for id, deadline := range g.pending {
		if !now.Before(deadline) {
			delete(g.pending, id)
			g.tryCompleteJoin(now)
		}
	}
	for _, id := range slices.Clone(g.order) {
		m, ok := g.members[id]
		if !ok || now.Before(m.heartbeatDeadline) {
			continue
		}
		// Members waiting for a join or sync response are alive (Kafka's
		// hasSatisfiedHeartbeat); the rebalance timeout bounds their wait.
		if m.joinRespond != nil || m.syncRespond != nil {
			continue
		}
		g.removeAndUpdate(id, now)
	}
	if g.state == PreparingRebalance && !now.Before(g.rebalanceDeadline) {
		if g.initialDelay && g.newMemberAdded && g.initialRemaining > 0 {
			// More members came during the delay: wait once more.
			delay := min(g.initialStep, g.initialRemaining)
			g.initialRemaining -= delay
			g.newMemberAdded = false
			g.rebalanceDeadline = now.Add(delay)
			return
		}
		if g.initialDelay {
			g.initialDelay = false
			g.tryCompleteJoin(now)
			if g.state != PreparingRebalance {
				return
			}
			// Not everybody is back: wait the full rebalance timeout from
			// now on, like a normal rebalance.
			g.rebalanceDeadline = now.Add(g.rebalanceTimeout())
			return
		}
		g.completeJoin(now)
	}
}

// Drop fails every waiting request with err (the coordinator is moving
// away or shutting down) and marks the group Dead.
func (g *Group) Drop(err error) {
	for _, m := range g.members {
		if m.joinRespond != nil {
			m.joinRespond(JoinResult{Err: err, MemberID: m.ID, Generation: -1})
			m.joinRespond = nil
		}
		if m.syncRespond != nil {
			m.syncRespond(SyncResult{Err: err})
			m.syncRespond = nil
		}
	}
	g.state = Dead
}

// MarkDead makes the group Dead (deleted or expired).
func (g *Group) MarkDead(now time.Time) {
	g.Drop(kerr.CoordinatorNotAvailable)
	g.stateTimestamp = now
}

// ValidateCommit is Kafka's validateOffsetCommit plus the state checks of
// doCommitOffsets: nil means the offsets may be written.
func (g *Group) ValidateCommit(memberID, instanceID string, generation int32, now time.Time) error {
	if g.state == Dead {
		return kerr.CoordinatorNotAvailable
	}
	if generation >= 0 || memberID != "" || instanceID != "" {
		m, err := g.currentMember(memberID, instanceID)
		if err != nil {
			return err
		}
		if generation != g.generation {
			return kerr.IllegalGeneration
		}
		if g.state == CompletingRebalance {
			return kerr.RebalanceInProgress
		}
		m.heartbeatDeadline = now.Add(m.SessionTimeout)
		return nil
	}
	if g.state != Empty {
		// A simple (generation -1) commit needs a group without members.
		return kerr.UnknownMemberID
	}
	return nil
}

// CommitOffsets applies replicated offsets.
func (g *Group) CommitOffsets(offsets map[TopicPartition]Offset) {
	for tp, o := range offsets {
		g.Offsets[tp] = o
	}
}

// ExpireOffsets returns the offsets of an Empty group older than
// retention (measured from the later of the commit and the group becoming
// Empty) and removes them from the group.
func (g *Group) ExpireOffsets(retention time.Duration, now time.Time) []TopicPartition {
	if g.state != Empty {
		return nil
	}
	var out []TopicPartition
	base := g.stateTimestamp.UnixMilli()
	for tp, o := range g.Offsets {
		if max(o.CommitTimestamp, base)+retention.Milliseconds() <= now.UnixMilli() {
			out = append(out, tp)
			delete(g.Offsets, tp)
		}
	}
	return out
}

// SubscribedTopics returns the topics the members of a consumer group
// subscribe to, and false if they cannot be known (not a consumer group).
func (g *Group) SubscribedTopics() (map[string]bool, bool) {
	if c := g.consumer; c != nil {
		out := map[string]bool{}
		for name := range c.subscribed {
			out[name] = true
		}
		for _, m := range c.members {
			for _, t := range m.SubscribedTopics {
				out[t] = true
			}
		}
		return out, true
	}
	if g.protocolType != "consumer" {
		return nil, len(g.members) == 0
	}
	out := map[string]bool{}
	for _, m := range g.members {
		var meta kmsg.ConsumerMemberMetadata
		if err := meta.ReadFrom(m.Metadata(g.protocol)); err != nil {
			return nil, false
		}
		for _, t := range meta.Topics {
			out[t] = true
		}
	}
	return out, true
}
