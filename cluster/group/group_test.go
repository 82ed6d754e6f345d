package group

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// harness drives one group with a fake clock and deterministic ids.
type harness struct {
	t   *testing.T
	g   *Group
	now time.Time
	ids int
}

func newHarness(t *testing.T, initialDelay time.Duration) *harness {
	h := &harness{t: t, now: time.Unix(1_700_000_000, 0)}
	h.g = New("g", initialDelay, h.now)
	h.g.SetIDGenerator(func(prefix string) string {
		h.ids++
		return fmt.Sprintf("%s-%d", prefix, h.ids)
	})
	return h
}

func (h *harness) advance(d time.Duration) {
	h.now = h.now.Add(d)
	h.g.Tick(h.now)
}

// joinCall is a JoinGroup in flight: res is set once answered.
type joinCall struct {
	res  *JoinResult
	done int
}

func (j *joinCall) answered() bool { return j.done > 0 }

func (h *harness) join(memberID, instanceID string, protos ...string) *joinCall {
	h.t.Helper()
	if len(protos) == 0 {
		protos = []string{"range"}
	}
	req := JoinRequest{
		MemberID: memberID, InstanceID: instanceID, ClientID: "c", ProtocolType: "consumer",
		SessionTimeout: 10 * time.Second, RebalanceTimeout: 30 * time.Second, RequireKnownMemberID: true,
	}
	for _, p := range protos {
		req.Protocols = append(req.Protocols, Protocol{Name: p, Metadata: []byte("meta-" + p)})
	}
	jc := &joinCall{}
	h.g.Join(req, h.now, func(r JoinResult) {
		jc.done++
		if jc.done > 1 {
			h.t.Errorf("join of %q answered twice", memberID)
		}
		jc.res = &r
	})
	return jc
}

// newMember runs the KIP-394 round and returns the member id and the
// pending second join.
func (h *harness) newMember() (string, *joinCall) {
	h.t.Helper()
	first := h.join("", "")
	if !first.answered() || !errors.Is(first.res.Err, kerr.MemberIDRequired) {
		h.t.Fatalf("first join: %+v, want MEMBER_ID_REQUIRED", first.res)
	}
	id := first.res.MemberID
	return id, h.join(id, "")
}

type syncCall struct {
	res  *SyncResult
	done int
}

func (h *harness) sync(memberID string, gen int32, assign map[string][]byte) *syncCall {
	h.t.Helper()
	sc := &syncCall{}
	persist := h.g.Sync(SyncRequest{MemberID: memberID, Generation: gen, Assignments: assign}, h.now, func(r SyncResult) {
		sc.done++
		sc.res = &r
	})
	if persist {
		h.g.AssignmentStored(gen, nil, h.now)
	}
	return sc
}

func wantErr(t *testing.T, what string, got, want error) {
	t.Helper()
	if want == nil && got != nil || want != nil && !errors.Is(got, want) {
		t.Fatalf("%s: error %v, want %v", what, got, want)
	}
}

func (h *harness) wantState(s State) {
	h.t.Helper()
	if h.g.State() != s {
		h.t.Fatalf("state %v, want %v", h.g.State(), s)
	}
}

// stableGroup forms a group of n dynamic members and returns their ids
// (the first is the leader).
func (h *harness) stableGroup(n int) []string {
	h.t.Helper()
	var ids []string
	var calls []*joinCall
	for range n {
		id, jc := h.newMember()
		ids = append(ids, id)
		calls = append(calls, jc)
	}
	for i := 0; h.g.State() == PreparingRebalance && i < 20; i++ {
		h.advance(h.g.InitialRebalanceDelay)
	}
	h.wantState(CompletingRebalance)
	for i, jc := range calls {
		if !jc.answered() || jc.res.Err != nil {
			h.t.Fatalf("member %d join: %+v", i, jc.res)
		}
	}
	gen := h.g.Generation()
	assign := map[string][]byte{}
	for _, id := range ids {
		assign[id] = []byte("assign-" + id)
	}
	var syncs []*syncCall
	for _, id := range ids[1:] {
		syncs = append(syncs, h.sync(id, gen, nil))
	}
	syncs = append(syncs, h.sync(h.g.Leader(), gen, assign))
	h.wantState(Stable)
	for _, sc := range syncs {
		if sc.done != 1 || sc.res.Err != nil {
			h.t.Fatalf("sync: %+v", sc.res)
		}
	}
	return ids
}

func TestJoinMemberIDRequiredAndFirstRebalance(t *testing.T) {
	h := newHarness(t, 3*time.Second)
	a, ja := h.newMember()
	h.wantState(PreparingRebalance)
	if ja.answered() {
		t.Fatal("join answered during the initial delay")
	}
	b, jb := h.newMember()
	h.advance(3 * time.Second) // b arrived during the delay: one more delay
	h.wantState(PreparingRebalance)
	h.advance(3 * time.Second)
	h.wantState(CompletingRebalance)
	if ja.res.Generation != 1 || jb.res.Generation != 1 {
		t.Fatalf("generations %d %d, want 1", ja.res.Generation, jb.res.Generation)
	}
	if ja.res.LeaderID != a || len(ja.res.Members) != 2 || len(jb.res.Members) != 0 {
		t.Fatalf("leader %q with %d members, follower sees %d", ja.res.LeaderID, len(ja.res.Members), len(jb.res.Members))
	}
	if jb.res.MemberID != b || ja.res.Protocol != "range" {
		t.Fatalf("member %q protocol %q", jb.res.MemberID, ja.res.Protocol)
	}
	sb := h.sync(b, 1, nil)
	if sb.done != 0 {
		t.Fatal("follower's sync answered before the leader's")
	}
	sa := h.sync(a, 1, map[string][]byte{a: []byte("A"), b: []byte("B")})
	h.wantState(Stable)
	if string(sa.res.Assignment) != "A" || string(sb.res.Assignment) != "B" {
		t.Fatalf("assignments %q %q", sa.res.Assignment, sb.res.Assignment)
	}
}

func TestProtocolSelectionByVote(t *testing.T) {
	h := newHarness(t, 3*time.Second)
	_, j1 := h.newMember()
	// The first member prefers roundrobin; the second only supports
	// range and roundrobin, preferring range; the third prefers range.
	first := h.join("", "")
	id2 := first.res.MemberID
	_ = id2
	h2 := h.join(id2, "", "range", "roundrobin")
	first3 := h.join("", "")
	h3 := h.join(first3.res.MemberID, "", "range", "sticky")
	h.advance(3 * time.Second)
	h.advance(3 * time.Second)
	_ = j1
	_ = h2
	if !h3.answered() {
		t.Fatal("not answered")
	}
	if got := h3.res.Protocol; got != "range" {
		t.Fatalf("protocol %q, want range", got)
	}
	// A member supporting none of the group's protocols is refused.
	bad := h.join("", "", "cooperative-sticky")
	wantErr(t, "join with no common protocol", bad.res.Err, kerr.InconsistentGroupProtocol)
}

func TestHeartbeatFencing(t *testing.T) {
	h := newHarness(t, 3*time.Second)
	ids := h.stableGroup(2)
	gen := h.g.Generation()
	tests := []struct {
		name   string
		member string
		gen    int32
		want   error
	}{
		{"current", ids[1], gen, nil},
		{"old generation", ids[1], gen - 1, kerr.IllegalGeneration},
		{"unknown member", "nobody", gen, kerr.UnknownMemberID},
	}
	for _, tt := range tests {
		wantErr(t, tt.name, h.g.Heartbeat(tt.member, "", tt.gen, h.now), tt.want)
	}
	// A member rejoining with new metadata starts a rebalance: the others'
	// heartbeats say REBALANCE_IN_PROGRESS; their old generation's syncs
	// and commits are fenced.
	jc := h.join(ids[1], "", "range", "roundrobin")
	h.wantState(PreparingRebalance)
	wantErr(t, "heartbeat during rebalance", h.g.Heartbeat(ids[0], "", gen, h.now), kerr.RebalanceInProgress)
	wantErr(t, "commit during rebalance", h.g.ValidateCommit(ids[0], "", gen, h.now), nil)
	sc := h.sync(ids[0], gen, nil)
	wantErr(t, "sync during rebalance", sc.res.Err, kerr.RebalanceInProgress)
	h.join(ids[0], "")
	if !jc.answered() {
		t.Fatal("rebalance did not complete when every member rejoined")
	}
	h.wantState(CompletingRebalance)
	wantErr(t, "heartbeat of the old generation", h.g.Heartbeat(ids[0], "", gen, h.now), kerr.IllegalGeneration)
	wantErr(t, "commit while completing", h.g.ValidateCommit(ids[0], "", gen+1, h.now), kerr.RebalanceInProgress)
	wantErr(t, "commit with old generation", h.g.ValidateCommit(ids[0], "", gen, h.now), kerr.IllegalGeneration)
	wantErr(t, "simple commit to a group with members", h.g.ValidateCommit("", "", -1, h.now), kerr.UnknownMemberID)
}

func TestLeaveRebalancesAndLastLeaveEmpties(t *testing.T) {
	h := newHarness(t, 3*time.Second)
	ids := h.stableGroup(3)
	gen := h.g.Generation()
	errs := h.g.Leave([]LeaveMember{{MemberID: ids[0]}, {MemberID: "ghost"}}, h.now)
	wantErr(t, "leave", errs[0], nil)
	wantErr(t, "leave unknown", errs[1], kerr.UnknownMemberID)
	h.wantState(PreparingRebalance)
	j1 := h.join(ids[1], "")
	j2 := h.join(ids[2], "")
	if !j1.answered() || !j2.answered() || j1.res.Generation != gen+1 {
		t.Fatalf("rejoin after leave: %+v %+v", j1.res, j2.res)
	}
	if h.g.Leader() == ids[0] {
		t.Fatal("the departed leader is still leader")
	}
	h.g.Leave([]LeaveMember{{MemberID: ids[1]}, {MemberID: ids[2]}}, h.now)
	h.wantState(Empty)
	if !h.g.TakeDirty() {
		t.Fatal("group became Empty without asking to be persisted")
	}
	wantErr(t, "simple commit to an empty group", h.g.ValidateCommit("", "", -1, h.now), nil)
}

func TestEmptyGroupKeepsProtocolType(t *testing.T) {
	h := newHarness(t, time.Second)
	ids := h.stableGroup(2)
	h.g.Leave([]LeaveMember{{MemberID: ids[0]}, {MemberID: ids[1]}}, h.now)
	h.wantState(Empty)
	if got := h.g.ProtocolType(); got != "consumer" {
		t.Fatalf("protocol type of the Empty group %q, want consumer", got)
	}
	if got := h.g.Protocol(); got != "" {
		t.Fatalf("protocol of the Empty group %q, want none", got)
	}
	// The metadata record written for the Empty group carries it, and a
	// coordinator that loads the record shows it too.
	e, err := Decode(GroupKey("g"), h.g.MetadataValue())
	if err != nil {
		t.Fatal(err)
	}
	r := Restore("g", &e.Metadata, nil, 0, h.now)
	if r.State() != Empty || r.ProtocolType() != "consumer" {
		t.Fatalf("restored Empty group: state %v, protocol type %q", r.State(), r.ProtocolType())
	}
	// A member of another protocol type may still start the group anew,
	// as in Kafka (an Empty group accepts any type).
	req := JoinRequest{MemberID: "", ProtocolType: "connect", Protocols: []Protocol{{Name: "default"}},
		SessionTimeout: 10 * time.Second, RebalanceTimeout: 10 * time.Second}
	var res *JoinResult
	h.g.Join(req, h.now, func(r JoinResult) { res = &r })
	h.advance(time.Second)
	if res == nil || res.Err != nil || h.g.ProtocolType() != "connect" {
		t.Fatalf("join of another protocol type into the Empty group: %+v, type %q", res, h.g.ProtocolType())
	}
}

func TestSessionExpiry(t *testing.T) {
	h := newHarness(t, 3*time.Second)
	ids := h.stableGroup(2)
	for range 3 {
		h.advance(3 * time.Second)
		wantErr(t, "heartbeat", h.g.Heartbeat(ids[0], "", h.g.Generation(), h.now), nil)
	}
	h.wantState(Stable)
	h.advance(3 * time.Second)
	// ids[1] never heartbeated: its 10s session has expired.
	h.wantState(PreparingRebalance)
	if _, ok := h.g.Member(ids[1]); ok {
		t.Fatal("expired member still in the group")
	}
	jc := h.join(ids[0], "")
	if !jc.answered() || len(jc.res.Members) != 1 {
		t.Fatalf("rebalance after expiry: %+v", jc.res)
	}
}

func TestRebalanceTimeoutDropsMembersThatDoNotRejoin(t *testing.T) {
	h := newHarness(t, 3*time.Second)
	ids := h.stableGroup(2)
	jc := h.join(ids[0], "", "range", "other") // new metadata: rebalance
	h.wantState(PreparingRebalance)
	start := h.now
	// ids[1] keeps heartbeating through the 30s rebalance timeout but
	// never rejoins: its heartbeats keep its session, not its place.
	for range 9 {
		h.advance(3 * time.Second)
		if err := h.g.Heartbeat(ids[1], "", h.g.Generation(), h.now); !errors.Is(err, kerr.RebalanceInProgress) {
			t.Fatalf("heartbeat %v into the rebalance: %v, want %v", h.now.Sub(start), err, kerr.RebalanceInProgress)
		}
	}
	h.advance(4 * time.Second) // past the rebalance timeout
	if !jc.answered() || jc.res.Err != nil {
		t.Fatalf("join not completed by the rebalance timeout: %+v", jc.res)
	}
	if _, ok := h.g.Member(ids[1]); ok || len(jc.res.Members) != 1 {
		t.Fatal("member that did not rejoin was kept")
	}
	if err := h.g.Heartbeat(ids[1], "", h.g.Generation(), h.now); !errors.Is(err, kerr.UnknownMemberID) {
		t.Fatalf("heartbeat of the dropped member: %v, want %v", err, kerr.UnknownMemberID)
	}
}

func TestPendingMemberExpires(t *testing.T) {
	h := newHarness(t, 3*time.Second)
	ids := h.stableGroup(1)
	first := h.join("", "")
	wantErr(t, "first join", first.res.Err, kerr.MemberIDRequired)
	// The pending member never comes back; the group stays Stable and the
	// pending id expires after the session timeout.
	for range 4 {
		h.advance(3 * time.Second)
		wantErr(t, "heartbeat", h.g.Heartbeat(ids[0], "", h.g.Generation(), h.now), nil)
	}
	h.wantState(Stable)
	late := h.join(first.res.MemberID, "")
	wantErr(t, "join with an expired pending id", late.res.Err, kerr.UnknownMemberID)
	h.wantState(Stable)
}

func TestStaticMemberRejoinWithoutRebalance(t *testing.T) {
	h := newHarness(t, 0)
	j := h.join("", "inst-1")
	h.advance(0)
	if !j.answered() || j.res.Err != nil {
		t.Fatalf("static join: %+v", j.res)
	}
	old := j.res.MemberID
	gen := j.res.Generation
	h.sync(old, gen, map[string][]byte{old: []byte("A")})
	h.wantState(Stable)

	// The instance restarts: it joins with no member id and the same
	// metadata: a new member id, the same generation, no rebalance.
	again := h.join("", "inst-1")
	if !again.answered() || again.res.Err != nil || again.res.Generation != gen {
		t.Fatalf("static rejoin: %+v", again.res)
	}
	h.wantState(Stable)
	if !h.g.TakeDirty() {
		t.Fatal("static member replaced without asking to persist the group")
	}
	if again.res.MemberID == old || !again.res.SkipAssignment {
		t.Fatalf("static rejoin: member %q (old %q), skip %v", again.res.MemberID, old, again.res.SkipAssignment)
	}
	wantErr(t, "old id fenced", h.g.Heartbeat(old, "inst-1", gen, h.now), kerr.FencedInstanceID)
	wantErr(t, "new id", h.g.Heartbeat(again.res.MemberID, "inst-1", gen, h.now), nil)
	sc := h.sync(again.res.MemberID, gen, nil)
	if string(sc.res.Assignment) != "A" {
		t.Fatalf("assignment after static rejoin %q", sc.res.Assignment)
	}
	// Static members leave by instance id.
	errs := h.g.Leave([]LeaveMember{{InstanceID: "inst-1", MemberID: old}}, h.now)
	wantErr(t, "leave with a fenced id", errs[0], kerr.FencedInstanceID)
	errs = h.g.Leave([]LeaveMember{{InstanceID: "inst-1"}}, h.now)
	wantErr(t, "leave by instance", errs[0], nil)
	h.wantState(Empty)
}

func TestStaticMemberChangedMetadataRebalances(t *testing.T) {
	h := newHarness(t, 0)
	j := h.join("", "inst-1")
	h.advance(0)
	gen := j.res.Generation
	h.sync(j.res.MemberID, gen, nil)
	again := h.join("", "inst-1", "roundrobin", "range")
	h.wantState(CompletingRebalance) // a sole member rejoined: done at once
	if !again.answered() || again.res.Generation != gen+1 {
		t.Fatalf("rejoin with new metadata: %+v", again.res)
	}
}

func TestInvalidSessionTimeout(t *testing.T) {
	h := newHarness(t, 0)
	var got JoinResult
	h.g.Join(JoinRequest{ProtocolType: "consumer", Protocols: []Protocol{{Name: "range"}}, SessionTimeout: time.Second}, h.now,
		func(r JoinResult) { got = r })
	wantErr(t, "1s session", got.Err, kerr.InvalidSessionTimeout)
}

func TestRecordsRoundTrip(t *testing.T) {
	h := newHarness(t, 3*time.Second)
	ids := h.stableGroup(2)
	e, err := Decode(GroupKey("g"), h.g.MetadataValue())
	if err != nil || e.IsOffset || e.Group != "g" {
		t.Fatalf("decode group: %+v %v", e, err)
	}
	r := Restore("g", &e.Metadata, nil, 0, h.now)
	if r.State() != Stable || r.Generation() != h.g.Generation() || r.Leader() != h.g.Leader() || len(r.Members()) != 2 {
		t.Fatalf("restored %v gen %d leader %q", r.State(), r.Generation(), r.Leader())
	}
	m, _ := r.Member(ids[1])
	if string(m.Assignment) != "assign-"+ids[1] {
		t.Fatalf("restored assignment %q", m.Assignment)
	}
	tp := TopicPartition{"t", 3}
	o := Offset{Offset: 42, LeaderEpoch: 7, Metadata: "md", CommitTimestamp: 99}
	e, err = Decode(OffsetKey("g", tp), OffsetValue(o))
	if err != nil || !e.IsOffset || e.TP != tp || e.Offset != o {
		t.Fatalf("decode offset: %+v %v", e, err)
	}
	e, err = Decode(OffsetKey("g", tp), nil)
	if err != nil || !e.Tombstone {
		t.Fatalf("decode tombstone: %+v %v", e, err)
	}
	// The key versions are Kafka's.
	var k kmsg.OffsetCommitKey
	if err := k.ReadFrom(OffsetKey("g", tp)); err != nil {
		t.Fatalf("offset key: %v", err)
	}
	var gk kmsg.GroupMetadataKey
	if err := gk.ReadFrom(GroupKey("g")); err != nil {
		t.Fatalf("group key: %v", err)
	}
	if k.Version != 1 || gk.Version != 2 {
		t.Fatalf("key versions %d %d", k.Version, gk.Version)
	}
}

func TestExpireOffsetsOfEmptyGroup(t *testing.T) {
	h := newHarness(t, 0)
	tp := TopicPartition{"t", 0}
	h.g.CommitOffsets(map[TopicPartition]Offset{tp: {Offset: 1, CommitTimestamp: h.now.UnixMilli()}})
	if got := h.g.ExpireOffsets(time.Hour, h.now.Add(59*time.Minute)); len(got) != 0 {
		t.Fatalf("expired early: %v", got)
	}
	if got := h.g.ExpireOffsets(time.Hour, h.now.Add(time.Hour)); len(got) != 1 || len(h.g.Offsets) != 0 {
		t.Fatalf("not expired: %v", got)
	}
}
