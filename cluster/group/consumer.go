package group

// KIP-848 consumer groups: the server-side reconciliation of Kafka's
// GroupMetadataManager.consumerGroupHeartbeat and CurrentAssignmentBuilder,
// without I/O, like the classic state machine.
//
// Three epochs drive it. The group epoch is bumped whenever what the
// assignment depends on changes: a member joins or leaves, a subscription
// changes, a subscribed topic gains partitions or is deleted. The target
// assignment is recomputed by the server-side assignor when the group
// epoch is ahead of the assignment epoch. Each member then moves towards
// its target on its own heartbeats: it first revokes what the target takes
// away (its epoch stays until it acknowledges, by no longer listing the
// partitions as owned), then it gets the target epoch and the partitions
// that are free. A partition still held (assigned or pending revocation)
// by another member is not handed out until that member released it: the
// receiver waits in UNRELEASED_PARTITIONS.
//
// Every change is recorded for persistence (TakeRecords) in Kafka's
// record schemas (consumer_records.go).

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TopicID is a topic's id.
type TopicID = [16]byte

// Assignment is partitions by topic id, each list sorted.
type Assignment map[TopicID][]int32

// Clone returns a deep copy.
func (a Assignment) Clone() Assignment {
	out := make(Assignment, len(a))
	for t, ps := range a {
		out[t] = slices.Clone(ps)
	}
	return out
}

// Equal reports whether a and b hold the same partitions.
func (a Assignment) Equal(b Assignment) bool {
	if a.Len() != b.Len() {
		return false
	}
	for t, ps := range a {
		if len(ps) > 0 && !slices.Equal(ps, b[t]) {
			return false
		}
	}
	return true
}

// Len is the number of partitions.
func (a Assignment) Len() int {
	n := 0
	for _, ps := range a {
		n += len(ps)
	}
	return n
}

func (a Assignment) has(t TopicID, p int32) bool {
	_, ok := slices.BinarySearch(a[t], p)
	return ok
}

func (a Assignment) add(t TopicID, p int32) {
	ps := a[t]
	if i, ok := slices.BinarySearch(ps, p); !ok {
		a[t] = slices.Insert(ps, i, p)
	}
}

// MemberState is a consumer group member's reconciliation state, with
// Kafka's MemberState values (stored in CurrentMemberAssignment).
type MemberState int8

const (
	MemberStable               MemberState = 0
	MemberUnrevokedPartitions  MemberState = 1
	MemberUnreleasedPartitions MemberState = 2
)

// Special member epochs of ConsumerGroupHeartbeat.
const (
	LeaveEpoch       int32 = -1 // a member leaves
	LeaveStaticEpoch int32 = -2 // a static member leaves for now and will come back
)

// TopicInfo is a topic as the metadata image shows it.
type TopicInfo struct {
	Name       string
	ID         TopicID
	Partitions int32
}

// Topics is the cluster's topics by name.
type Topics map[string]TopicInfo

// ConsumerMember is one member of a consumer group.
type ConsumerMember struct {
	ID               string
	InstanceID       string
	RackID           string
	ClientID         string
	ClientHost       string
	SubscribedTopics []string // sorted
	SubscribedRegex  string
	RebalanceTimeout time.Duration
	ServerAssignor   string

	Epoch             int32
	PreviousEpoch     int32
	State             MemberState
	Assigned          Assignment
	PendingRevocation Assignment

	sessionDeadline time.Time
	// revokeDeadline is when a member that was asked to revoke
	// partitions is fenced if it has not (its rebalance timeout).
	revokeDeadline time.Time
}

// ConsumerHeartbeat is a ConsumerGroupHeartbeat request.
type ConsumerHeartbeat struct {
	MemberID         string
	MemberEpoch      int32
	InstanceID       *string
	RackID           *string
	RebalanceTimeout time.Duration // < 0: unchanged
	ClientID         string
	ClientHost       string
	SubscribedTopics []string // nil: unchanged
	SubscribedRegex  *string  // nil: unchanged
	ServerAssignor   *string
	// Owned is what the member owns; nil: unchanged since its last
	// heartbeat.
	Owned Assignment
}

// ConsumerResult is a ConsumerGroupHeartbeat answer.
type ConsumerResult struct {
	MemberID    string
	MemberEpoch int32
	// Assignment is sent when the request was full or the member's
	// assignment changed; nil otherwise.
	Assignment Assignment
}

// ConsumerConfig is the coordinator's configuration of consumer groups.
type ConsumerConfig struct {
	SessionTimeout    time.Duration // group.consumer.session.timeout.ms
	HeartbeatInterval time.Duration // group.consumer.heartbeat.interval.ms
	Assignors         []string      // group.consumer.assignors, the first is the default
}

// Consumer is the KIP-848 part of a Group whose type is consumer.
type Consumer struct {
	groupID         string
	cfg             ConsumerConfig
	GroupEpoch      int32
	AssignmentEpoch int32
	members         map[string]*ConsumerMember
	static          map[string]string // instance id -> member id
	target          map[string]Assignment
	// subscribed is the metadata of the subscribed topics the target was
	// computed from (name -> id, partitions); a difference bumps the epoch.
	subscribed map[string]TopicInfo

	changes changeSet
}

// changeSet is what must be written since the last TakeRecords.
type changeSet struct {
	memberMeta  map[string]bool
	target      map[string]bool
	current     map[string]bool
	removed     map[string]bool
	groupEpoch  bool
	targetEpoch bool
}

func (c *changeSet) reset() {
	*c = changeSet{memberMeta: map[string]bool{}, target: map[string]bool{}, current: map[string]bool{}, removed: map[string]bool{}}
}

func newConsumer(id string, cfg ConsumerConfig) *Consumer {
	c := &Consumer{
		groupID:    id,
		cfg:        cfg,
		members:    map[string]*ConsumerMember{},
		static:     map[string]string{},
		target:     map[string]Assignment{},
		subscribed: map[string]TopicInfo{},
	}
	c.changes.reset()
	return c
}

// ConsumerState is the group's state as Kafka names it.
func (c *Consumer) ConsumerState() string {
	switch {
	case len(c.members) == 0:
		return "Empty"
	case c.GroupEpoch > c.AssignmentEpoch:
		return "Assigning"
	}
	for _, m := range c.members {
		if m.State != MemberStable || m.Epoch != c.AssignmentEpoch {
			return "Reconciling"
		}
	}
	return "Stable"
}

// Members returns the members by id.
func (c *Consumer) Members() []*ConsumerMember {
	out := slices.Collect(maps.Values(c.members))
	slices.SortFunc(out, func(a, b *ConsumerMember) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Member returns a member.
func (c *Consumer) Member(id string) (*ConsumerMember, bool) {
	m, ok := c.members[id]
	return m, ok
}

// Target returns a member's target assignment.
func (c *Consumer) Target(memberID string) Assignment { return c.target[memberID] }

// HeartbeatInterval is group.consumer.heartbeat.interval.ms.
func (c *Consumer) HeartbeatInterval() time.Duration { return c.cfg.HeartbeatInterval }

// AssignorName is the assignor the group uses: the one most of its
// members ask for, else the configured default.
func (c *Consumer) AssignorName() string {
	counts := map[string]int{}
	for _, m := range c.members {
		if m.ServerAssignor != "" {
			counts[m.ServerAssignor]++
		}
	}
	best, n := c.cfg.Assignors[0], 0
	for _, name := range slices.Sorted(maps.Keys(counts)) {
		if counts[name] > n {
			best, n = name, counts[name]
		}
	}
	return best
}

func fencedErr(format string, args ...any) error {
	return &Error{kerr.FencedMemberEpoch, fmt.Sprintf(format, args...)}
}

// Error is a Kafka error with the message to send with it.
type Error struct {
	Err *kerr.Error
	Msg string
}

func (e *Error) Error() string { return e.Err.Message + ": " + e.Msg }
func (e *Error) Unwrap() error { return e.Err }

// validateHeartbeat is Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid.
func (c *Consumer) validateHeartbeat(req *ConsumerHeartbeat) error {
	invalid := func(msg string) error { return &Error{kerr.InvalidRequest, msg} }
	if req.InstanceID != nil && *req.InstanceID == "" {
		return invalid("InstanceId can't be empty.")
	}
	if req.RackID != nil && *req.RackID == "" {
		return invalid("RackId can't be empty.")
	}
	switch e := req.MemberEpoch; {
	case e > 0 || e == LeaveEpoch:
		if req.MemberID == "" {
			return invalid("MemberId can't be empty.")
		}
	case e == 0:
		if req.MemberID == "" {
			return invalid("MemberId can't be empty.")
		}
		if req.RebalanceTimeout < 0 {
			return invalid("RebalanceTimeoutMs must be provided in first request.")
		}
		if req.Owned == nil || req.Owned.Len() != 0 {
			return invalid("TopicPartitions must be empty when (re-)joining.")
		}
		if req.SubscribedTopics == nil && req.SubscribedRegex == nil {
			return invalid("SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
		}
	case e == LeaveStaticEpoch:
		if req.MemberID == "" {
			return invalid("MemberId can't be empty.")
		}
		if req.InstanceID == nil {
			return invalid("InstanceId can't be null.")
		}
	default:
		return invalid("MemberEpoch is invalid.")
	}
	if req.SubscribedRegex != nil && *req.SubscribedRegex != "" {
		if _, err := compileSubscription(*req.SubscribedRegex); err != nil {
			return &Error{kerr.InvalidRegularExpression, err.Error()}
		}
	}
	if req.ServerAssignor != nil && !slices.Contains(c.cfg.Assignors, *req.ServerAssignor) {
		return &Error{kerr.UnsupportedAssignor, fmt.Sprintf("ServerAssignor %s is not supported. Supported assignors: %v.", *req.ServerAssignor, c.cfg.Assignors)}
	}
	return nil
}

// compileSubscription compiles a subscription regex. Kafka uses RE2/J
// and matches whole topic names; Go's regexp is RE2 too, anchored here.
func compileSubscription(re string) (*regexp.Regexp, error) {
	return regexp.Compile(`^(?:` + re + `)$`)
}

// isSubset reports whether owned is within assigned (nil owned: no).
func isSubset(owned, assigned Assignment) bool {
	if owned == nil {
		return false
	}
	for t, ps := range owned {
		for _, p := range ps {
			if !assigned.has(t, p) {
				return false
			}
		}
	}
	return true
}

// checkEpoch is Kafka's throwIfConsumerGroupMemberEpochIsInvalid: a member
// may come with its previous epoch if the answer bumping it was lost and it
// owns no more than its assignment.
func checkEpoch(m *ConsumerMember, epoch int32, owned Assignment) error {
	switch {
	case epoch > m.Epoch:
		return fencedErr("the member epoch %d is greater than the coordinator's %d; the member must abandon all its partitions and rejoin", epoch, m.Epoch)
	case epoch < m.Epoch && (epoch != m.PreviousEpoch || !isSubset(owned, m.Assigned)):
		return fencedErr("the member epoch %d is smaller than the coordinator's %d; the member must abandon all its partitions and rejoin", epoch, m.Epoch)
	}
	return nil
}

// Heartbeat handles a ConsumerGroupHeartbeat of this group.
func (c *Consumer) Heartbeat(req ConsumerHeartbeat, topics Topics, now time.Time) (ConsumerResult, error) {
	if err := c.validateHeartbeat(&req); err != nil {
		return ConsumerResult{}, err
	}
	if req.MemberEpoch == LeaveEpoch || req.MemberEpoch == LeaveStaticEpoch {
		return c.leave(req, now)
	}
	member, isNew, err := c.memberFor(req)
	if err != nil {
		return ConsumerResult{}, err
	}
	old := *member
	updated := *member
	if req.InstanceID != nil {
		updated.InstanceID = *req.InstanceID
	}
	if req.RackID != nil {
		updated.RackID = *req.RackID
	}
	if req.RebalanceTimeout >= 0 {
		updated.RebalanceTimeout = req.RebalanceTimeout
	}
	if req.ServerAssignor != nil {
		updated.ServerAssignor = *req.ServerAssignor
	}
	if req.SubscribedTopics != nil {
		updated.SubscribedTopics = slices.Sorted(slices.Values(req.SubscribedTopics))
		updated.SubscribedTopics = slices.Compact(updated.SubscribedTopics)
	}
	if req.SubscribedRegex != nil {
		updated.SubscribedRegex = *req.SubscribedRegex
	}
	updated.ClientID, updated.ClientHost = req.ClientID, req.ClientHost
	bump := isNew
	if isNew || !memberMetaEqual(&old, &updated) {
		c.changes.memberMeta[updated.ID] = true
		if !slices.Equal(old.SubscribedTopics, updated.SubscribedTopics) || old.SubscribedRegex != updated.SubscribedRegex {
			bump = true
		}
	}
	*member = updated
	c.members[member.ID] = member
	if member.InstanceID != "" {
		c.static[member.InstanceID] = member.ID
	}
	c.refreshMetadata(topics, bump)
	if c.GroupEpoch > c.AssignmentEpoch {
		c.computeTarget(topics)
	}
	changed := c.reconcile(member, req.Owned, now)
	member.sessionDeadline = now.Add(c.cfg.SessionTimeout)

	res := ConsumerResult{MemberID: member.ID, MemberEpoch: member.Epoch}
	full := req.MemberEpoch == 0 || (req.RebalanceTimeout >= 0 && (req.SubscribedTopics != nil || req.SubscribedRegex != nil) && req.Owned != nil)
	if full || changed {
		res.Assignment = member.Assigned.Clone()
	}
	return res, nil
}

func memberMetaEqual(a, b *ConsumerMember) bool {
	return a.InstanceID == b.InstanceID && a.RackID == b.RackID && a.ClientID == b.ClientID &&
		a.ClientHost == b.ClientHost && slices.Equal(a.SubscribedTopics, b.SubscribedTopics) &&
		a.SubscribedRegex == b.SubscribedRegex && a.RebalanceTimeout == b.RebalanceTimeout &&
		a.ServerAssignor == b.ServerAssignor
}

// memberFor finds or creates the member of a (non-leave) heartbeat.
func (c *Consumer) memberFor(req ConsumerHeartbeat) (*ConsumerMember, bool, error) {
	join := req.MemberEpoch == 0
	if req.InstanceID == nil {
		m, ok := c.members[req.MemberID]
		switch {
		case ok:
			if join {
				// A known member rejoining with epoch 0 (it lost its
				// state): Kafka accepts it as a fresh join of the same id.
				if m.Epoch != 0 {
					c.resetMember(m)
				}
				return m, false, nil
			}
			return m, false, checkEpoch(m, req.MemberEpoch, req.Owned)
		case join:
			return &ConsumerMember{ID: req.MemberID, RebalanceTimeout: req.RebalanceTimeout, Assigned: Assignment{}, PendingRevocation: Assignment{}}, true, nil
		}
		return nil, false, &Error{kerr.UnknownMemberID, fmt.Sprintf("member %s is not a member of group %s", req.MemberID, c.groupID)}
	}
	inst := *req.InstanceID
	existing := c.members[c.static[inst]]
	if join {
		switch {
		case existing == nil:
			if m, ok := c.members[req.MemberID]; ok {
				return m, false, nil
			}
			return &ConsumerMember{ID: req.MemberID, InstanceID: inst, RebalanceTimeout: req.RebalanceTimeout, Assigned: Assignment{}, PendingRevocation: Assignment{}}, true, nil
		case existing.ID == req.MemberID:
			if existing.Epoch != 0 {
				c.resetMember(existing)
			}
			return existing, false, nil
		case existing.Epoch != LeaveStaticEpoch:
			return nil, false, &Error{kerr.UnreleasedInstanceID, fmt.Sprintf("static member %s with instance id %s cannot join the group because the instance id is owned by member %s", req.MemberID, inst, existing.ID)}
		}
		// The instance left with epoch -2 and comes back under a new
		// member id: it takes over the old member's assignment and
		// target, from epoch 0.
		m := *existing
		m.ID = req.MemberID
		m.Epoch, m.PreviousEpoch = 0, 0
		m.Assigned = existing.Assigned.Clone()
		m.PendingRevocation = existing.PendingRevocation.Clone()
		target, hasTarget := c.target[existing.ID]
		c.removeMember(existing.ID)
		if hasTarget {
			c.target[m.ID] = target
			c.changes.target[m.ID] = true
		}
		c.members[m.ID] = &m
		c.static[inst] = m.ID
		c.changes.memberMeta[m.ID] = true
		c.changes.current[m.ID] = true
		return &m, false, nil
	}
	if existing == nil {
		return nil, false, &Error{kerr.UnknownMemberID, "instance id " + inst + " is unknown"}
	}
	if existing.ID != req.MemberID {
		return nil, false, &Error{kerr.FencedInstanceID, fmt.Sprintf("static member %s with instance id %s was fenced by member %s", req.MemberID, inst, existing.ID)}
	}
	return existing, false, checkEpoch(existing, req.MemberEpoch, req.Owned)
}

// resetMember makes a member that rejoined with epoch 0 start over: it
// owns nothing and reconciles from scratch.
func (c *Consumer) resetMember(m *ConsumerMember) {
	m.Epoch, m.PreviousEpoch, m.State = 0, 0, MemberStable
	m.Assigned, m.PendingRevocation = Assignment{}, Assignment{}
	c.changes.current[m.ID] = true
}

// leave handles a heartbeat with epoch -1 or -2.
func (c *Consumer) leave(req ConsumerHeartbeat, now time.Time) (ConsumerResult, error) {
	var m *ConsumerMember
	if req.InstanceID != nil {
		m = c.members[c.static[*req.InstanceID]]
		if m == nil {
			return ConsumerResult{}, &Error{kerr.UnknownMemberID, "instance id " + *req.InstanceID + " is unknown"}
		}
		if m.ID != req.MemberID {
			return ConsumerResult{}, &Error{kerr.FencedInstanceID, fmt.Sprintf("static member %s with instance id %s was fenced by member %s", req.MemberID, *req.InstanceID, m.ID)}
		}
	} else {
		var ok bool
		if m, ok = c.members[req.MemberID]; !ok {
			return ConsumerResult{}, &Error{kerr.UnknownMemberID, fmt.Sprintf("member %s is not a member of group %s", req.MemberID, c.groupID)}
		}
	}
	if req.MemberEpoch == LeaveStaticEpoch {
		// A static member leaving temporarily keeps its assignment
		// until it comes back or its session expires.
		m.Epoch = LeaveStaticEpoch
		m.sessionDeadline = now.Add(c.cfg.SessionTimeout)
		c.changes.current[m.ID] = true
		return ConsumerResult{MemberID: m.ID, MemberEpoch: LeaveStaticEpoch}, nil
	}
	c.fence(m.ID)
	return ConsumerResult{MemberID: m.ID, MemberEpoch: LeaveEpoch}, nil
}

// fence removes a member and bumps the group epoch, so the others get its
// partitions.
func (c *Consumer) fence(id string) {
	c.removeMember(id)
	c.GroupEpoch++
	c.changes.groupEpoch = true
}

func (c *Consumer) removeMember(id string) {
	m, ok := c.members[id]
	if !ok {
		return
	}
	delete(c.members, id)
	delete(c.target, id)
	if m.InstanceID != "" && c.static[m.InstanceID] == id {
		delete(c.static, m.InstanceID)
	}
	delete(c.changes.memberMeta, id)
	delete(c.changes.target, id)
	delete(c.changes.current, id)
	c.changes.removed[id] = true
}

// subscribedTopics is every topic some member subscribes to, by name or
// by regex.
func (c *Consumer) subscribedTopics(topics Topics) map[string]TopicInfo {
	out := map[string]TopicInfo{}
	for _, m := range c.members {
		for _, t := range m.SubscribedTopics {
			if ti, ok := topics[t]; ok {
				out[t] = ti
			}
		}
		if m.SubscribedRegex != "" {
			re, err := compileSubscription(m.SubscribedRegex)
			if err != nil {
				continue
			}
			for name, ti := range topics {
				if re.MatchString(name) {
					out[name] = ti
				}
			}
		}
	}
	return out
}

// memberTopics is the topics a member subscribes to that exist.
func (m *ConsumerMember) topics(topics Topics) map[string]TopicInfo {
	out := map[string]TopicInfo{}
	for _, t := range m.SubscribedTopics {
		if ti, ok := topics[t]; ok {
			out[t] = ti
		}
	}
	if m.SubscribedRegex != "" {
		if re, err := compileSubscription(m.SubscribedRegex); err == nil {
			for name, ti := range topics {
				if re.MatchString(name) {
					out[name] = ti
				}
			}
		}
	}
	return out
}

// refreshMetadata bumps the group epoch when bump is set or when the
// subscribed topics' metadata changed (a topic appeared, was deleted or
// recreated, or gained partitions).
func (c *Consumer) refreshMetadata(topics Topics, bump bool) {
	sub := c.subscribedTopics(topics)
	if c.subscribed == nil {
		// Restored from the log: what the target was computed from is
		// not stored, so it is taken as the current metadata.
		c.subscribed = sub
	} else if !maps.Equal(sub, c.subscribed) {
		c.subscribed = sub
		bump = true
	}
	if bump {
		c.GroupEpoch++
		c.changes.groupEpoch = true
	}
}

// RefreshMetadata is called when the metadata image changed: a
// subscribed topic that changed bumps the group epoch.
func (c *Consumer) RefreshMetadata(topics Topics) {
	if len(c.members) > 0 {
		c.refreshMetadata(topics, false)
	}
}

// computeTarget runs the assignor for the group epoch.
func (c *Consumer) computeTarget(topics Topics) {
	specs := make([]AssignorMember, 0, len(c.members))
	for _, m := range c.Members() {
		sub := m.topics(topics)
		specs = append(specs, AssignorMember{ID: m.ID, InstanceID: m.InstanceID, Topics: slices.Collect(maps.Values(sub)), Previous: c.target[m.ID]})
	}
	next := Assign(c.AssignorName(), specs)
	for id, a := range next {
		if !a.Equal(c.target[id]) {
			c.target[id] = a
			c.changes.target[id] = true
		}
	}
	c.AssignmentEpoch = c.GroupEpoch
	c.changes.targetEpoch = true
}

// partitionEpoch is Kafka's currentPartitionEpoch: the epoch of the
// member holding a partition (assigned or pending revocation), or -1.
func (c *Consumer) partitionHeld(except string, t TopicID, p int32) bool {
	for id, m := range c.members {
		if id != except && (m.Assigned.has(t, p) || m.PendingRevocation.has(t, p)) {
			return true
		}
	}
	return false
}

// ownsAny reports whether owned (nil: unknown, so assumed) still holds a
// partition of revoked.
func ownsAny(owned, revoked Assignment) bool {
	if owned == nil {
		return true
	}
	for t, ps := range owned {
		for _, p := range ps {
			if revoked.has(t, p) {
				return true
			}
		}
	}
	return false
}

// reconcile is Kafka's CurrentAssignmentBuilder: it moves the member
// towards its target and reports whether its assignment changed.
func (c *Consumer) reconcile(m *ConsumerMember, owned Assignment, now time.Time) bool {
	before := *m
	switch m.State {
	case MemberStable:
		if m.Epoch != c.AssignmentEpoch {
			c.nextAssignment(m, m.Epoch, owned, now)
		}
	case MemberUnrevokedPartitions:
		if !ownsAny(owned, m.PendingRevocation) {
			c.nextAssignment(m, m.Epoch+1, owned, now)
		}
	case MemberUnreleasedPartitions:
		c.nextAssignment(m, m.Epoch, owned, now)
	}
	changed := !before.Assigned.Equal(m.Assigned)
	if changed || before.Epoch != m.Epoch || before.State != m.State || !before.PendingRevocation.Equal(m.PendingRevocation) {
		if before.Epoch != m.Epoch {
			m.PreviousEpoch = before.Epoch
		}
		c.changes.current[m.ID] = true
	}
	return changed
}

func (c *Consumer) nextAssignment(m *ConsumerMember, epoch int32, owned Assignment, now time.Time) {
	target := c.target[m.ID]
	assigned, revoke, pending := Assignment{}, Assignment{}, Assignment{}
	unreleased := false
	ids := map[TopicID]bool{}
	for t := range target {
		ids[t] = true
	}
	for t := range m.Assigned {
		ids[t] = true
	}
	for t := range ids {
		for _, p := range m.Assigned[t] {
			if target.has(t, p) {
				assigned.add(t, p)
			} else {
				revoke.add(t, p)
			}
		}
		for _, p := range target[t] {
			if assigned.has(t, p) {
				continue
			}
			if c.partitionHeld(m.ID, t, p) {
				unreleased = true
				continue
			}
			pending.add(t, p)
		}
	}
	switch {
	case revoke.Len() > 0 && ownsAny(owned, revoke):
		if m.State != MemberUnrevokedPartitions {
			m.revokeDeadline = now.Add(max(m.RebalanceTimeout, time.Millisecond))
		}
		m.State = MemberUnrevokedPartitions
		m.Epoch = epoch
		m.Assigned, m.PendingRevocation = assigned, revoke
		return
	case pending.Len() > 0:
		for t, ps := range pending {
			for _, p := range ps {
				assigned.add(t, p)
			}
		}
	}
	m.State = MemberStable
	if unreleased {
		m.State = MemberUnreleasedPartitions
	}
	m.Epoch = c.AssignmentEpoch
	m.Assigned, m.PendingRevocation = assigned, Assignment{}
}

// Tick expires sessions and fences members that did not revoke within
// their rebalance timeout. It reports whether anything changed.
func (c *Consumer) Tick(now time.Time) bool {
	changed := false
	for _, m := range c.Members() {
		expired := now.After(m.sessionDeadline)
		stuck := m.State == MemberUnrevokedPartitions && m.Epoch != LeaveStaticEpoch && now.After(m.revokeDeadline)
		if expired || stuck {
			c.fence(m.ID)
			changed = true
		}
	}
	return changed
}

// ValidateCommit is Kafka's ConsumerGroup.validateOffsetCommit: a commit
// without a member epoch needs an empty group; a member commits with its
// current epoch (STALE_MEMBER_EPOCH otherwise) and OffsetCommit v9+.
func (c *Consumer) ValidateCommit(memberID string, epoch int32, version int16, transactional bool) error {
	if epoch < 0 && len(c.members) == 0 {
		return nil
	}
	m, ok := c.members[memberID]
	if !ok {
		return kerr.UnknownMemberID
	}
	if !transactional && version >= 0 && version < 9 {
		return kerr.UnsupportedVersion
	}
	if epoch != m.Epoch {
		return kerr.StaleMemberEpoch
	}
	return nil
}

// ValidateFetch is Kafka's ConsumerGroup.validateOffsetFetch (OffsetFetch
// v9+ with a member id and epoch).
func (c *Consumer) ValidateFetch(memberID string, epoch int32) error {
	if memberID == "" && epoch < 0 {
		return nil
	}
	m, ok := c.members[memberID]
	if !ok {
		return kerr.UnknownMemberID
	}
	if epoch != m.Epoch {
		return kerr.StaleMemberEpoch
	}
	return nil
}
