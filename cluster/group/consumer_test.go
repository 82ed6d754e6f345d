package group

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

var (
	tidA = TopicID{1}
	tidB = TopicID{2}
)

func testTopics(pa, pb int32) Topics {
	return Topics{"a": {Name: "a", ID: tidA, Partitions: pa}, "b": {Name: "b", ID: tidB, Partitions: pb}}
}

func testConsumer() *Consumer {
	return newConsumer("g", ConsumerConfig{SessionTimeout: 45 * time.Second, HeartbeatInterval: 5 * time.Second, Assignors: []string{"uniform", "range"}})
}

func join(t *testing.T, c *Consumer, id string, topics Topics, now time.Time) ConsumerResult {
	t.Helper()
	res, err := c.Heartbeat(ConsumerHeartbeat{MemberID: id, MemberEpoch: 0, RebalanceTimeout: time.Minute, SubscribedTopics: []string{"a"}, Owned: Assignment{}}, topics, now)
	if err != nil {
		t.Fatalf("join %s: %v", id, err)
	}
	return res
}

func beat(t *testing.T, c *Consumer, id string, epoch int32, owned Assignment, topics Topics, now time.Time) ConsumerResult {
	t.Helper()
	res, err := c.Heartbeat(ConsumerHeartbeat{MemberID: id, MemberEpoch: epoch, RebalanceTimeout: -1, Owned: owned}, topics, now)
	if err != nil {
		t.Fatalf("heartbeat %s epoch %d: %v", id, epoch, err)
	}
	return res
}

// noDoubleOwnership fails if a partition is held (assigned or pending
// revocation) by two members.
func noDoubleOwnership(t *testing.T, c *Consumer) {
	t.Helper()
	seen := map[tp]string{}
	for _, m := range c.members {
		for _, a := range []Assignment{m.Assigned, m.PendingRevocation} {
			for tid, ps := range a {
				for _, p := range ps {
					if o, ok := seen[tp{tid, p}]; ok && o != m.ID {
						t.Fatalf("partition %v/%d held by %s and %s", tid[0], p, o, m.ID)
					}
					seen[tp{tid, p}] = m.ID
				}
			}
		}
	}
}

func TestConsumerRevocationBeforeAssignment(t *testing.T) {
	c := testConsumer()
	topics := testTopics(6, 0)
	now := time.Unix(1000, 0)
	r1 := join(t, c, "m1", topics, now)
	if r1.MemberEpoch != 1 || r1.Assignment.Len() != 6 {
		t.Fatalf("first member: epoch %d, %d partitions; want 1, 6", r1.MemberEpoch, r1.Assignment.Len())
	}
	r2 := join(t, c, "m2", topics, now)
	// m2 is at the new epoch but gets nothing until m1 revokes.
	if r2.MemberEpoch != 2 || r2.Assignment.Len() != 0 {
		t.Fatalf("second member: epoch %d, %d partitions; want 2, 0", r2.MemberEpoch, r2.Assignment.Len())
	}
	noDoubleOwnership(t, c)
	// m1 heartbeats still owning all 6: asked to revoke 3, stays at epoch 1.
	r1 = beat(t, c, "m1", 1, r1.Assignment, topics, now)
	if r1.MemberEpoch != 1 || r1.Assignment.Len() != 3 || c.members["m1"].State != MemberUnrevokedPartitions {
		t.Fatalf("m1 after rebalance: epoch %d, %d partitions, state %d", r1.MemberEpoch, r1.Assignment.Len(), c.members["m1"].State)
	}
	// m2 still cannot get the partitions m1 holds.
	r2 = beat(t, c, "m2", 2, Assignment{}, topics, now)
	if c.members["m2"].Assigned.Len() != 0 || c.members["m2"].State != MemberUnreleasedPartitions {
		t.Fatalf("m2 got partitions before m1 revoked them: %v", c.members["m2"].Assigned)
	}
	noDoubleOwnership(t, c)
	// m1 acknowledges the revocation: it moves to epoch 2.
	r1 = beat(t, c, "m1", 1, r1.Assignment, topics, now)
	if r1.MemberEpoch != 2 || c.members["m1"].State != MemberStable {
		t.Fatalf("m1 after revoking: epoch %d state %d", r1.MemberEpoch, c.members["m1"].State)
	}
	r2 = beat(t, c, "m2", 2, Assignment{}, topics, now)
	if r2.Assignment.Len() != 3 || c.members["m2"].State != MemberStable {
		t.Fatalf("m2 after m1 revoked: %d partitions, state %d", r2.Assignment.Len(), c.members["m2"].State)
	}
	noDoubleOwnership(t, c)
	if got := c.ConsumerState(); got != "Stable" {
		t.Fatalf("group state %s, want Stable", got)
	}
}

func TestConsumerFencing(t *testing.T) {
	inst := "i1"
	cases := []struct {
		name string
		req  ConsumerHeartbeat
		want *kerr.Error
	}{
		{"epoch ahead", ConsumerHeartbeat{MemberID: "m1", MemberEpoch: 5, RebalanceTimeout: -1}, kerr.FencedMemberEpoch},
		{"epoch behind, not previous", ConsumerHeartbeat{MemberID: "m1", MemberEpoch: 0 + 3, RebalanceTimeout: -1}, kerr.FencedMemberEpoch},
		{"unknown member", ConsumerHeartbeat{MemberID: "zz", MemberEpoch: 1, RebalanceTimeout: -1}, kerr.UnknownMemberID},
		{"invalid epoch", ConsumerHeartbeat{MemberID: "m1", MemberEpoch: -3, RebalanceTimeout: -1}, kerr.InvalidRequest},
		{"unknown assignor", ConsumerHeartbeat{MemberID: "m1", MemberEpoch: 1, RebalanceTimeout: -1, ServerAssignor: ptr("sticky")}, kerr.UnsupportedAssignor},
		{"bad regex", ConsumerHeartbeat{MemberID: "m1", MemberEpoch: 1, RebalanceTimeout: -1, SubscribedRegex: ptr("(")}, kerr.InvalidRegularExpression},
		{"static, other instance owner", ConsumerHeartbeat{MemberID: "m9", MemberEpoch: 0, InstanceID: &inst, RebalanceTimeout: time.Minute, SubscribedTopics: []string{"a"}, Owned: Assignment{}}, kerr.UnreleasedInstanceID},
		{"static, fenced id", ConsumerHeartbeat{MemberID: "m9", MemberEpoch: 1, InstanceID: &inst, RebalanceTimeout: -1}, kerr.FencedInstanceID},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := testConsumer()
			topics := testTopics(4, 0)
			now := time.Unix(1000, 0)
			join(t, c, "m1", topics, now)
			// m1 is now epoch 1 with previous epoch 0; bump it to 2.
			join(t, c, "m2", topics, now)
			if _, err := c.Heartbeat(ConsumerHeartbeat{MemberID: "s1", MemberEpoch: 0, InstanceID: &inst, RebalanceTimeout: time.Minute, SubscribedTopics: []string{"a"}, Owned: Assignment{}}, topics, now); err != nil {
				t.Fatal(err)
			}
			_, err := c.Heartbeat(tc.req, topics, now)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestConsumerStaticLeaveAndRejoin(t *testing.T) {
	c := testConsumer()
	topics := testTopics(4, 0)
	now := time.Unix(1000, 0)
	inst := "i1"
	res, err := c.Heartbeat(ConsumerHeartbeat{MemberID: "s1", MemberEpoch: 0, InstanceID: &inst, RebalanceTimeout: time.Minute, SubscribedTopics: []string{"a"}, Owned: Assignment{}}, topics, now)
	if err != nil || res.Assignment.Len() != 4 {
		t.Fatalf("join: %v, %v", res, err)
	}
	epoch := c.GroupEpoch
	if _, err := c.Heartbeat(ConsumerHeartbeat{MemberID: "s1", MemberEpoch: LeaveStaticEpoch, InstanceID: &inst, RebalanceTimeout: -1}, topics, now); err != nil {
		t.Fatal(err)
	}
	if c.GroupEpoch != epoch {
		t.Fatalf("a static leave bumped the group epoch")
	}
	res, err = c.Heartbeat(ConsumerHeartbeat{MemberID: "s2", MemberEpoch: 0, InstanceID: &inst, RebalanceTimeout: time.Minute, SubscribedTopics: []string{"a"}, Owned: Assignment{}}, topics, now)
	if err != nil || res.MemberID != "s2" || res.Assignment.Len() != 4 {
		t.Fatalf("rejoin under a new id: %+v, %v", res, err)
	}
	if _, ok := c.members["s1"]; ok {
		t.Fatal("the old member is still there")
	}
	// Session expiry removes it and bumps the epoch.
	if !c.Tick(now.Add(46 * time.Second)) {
		t.Fatal("session did not expire")
	}
	if len(c.members) != 0 || c.GroupEpoch != epoch+1 || c.ConsumerState() != "Empty" {
		t.Fatalf("after expiry: %d members, epoch %d", len(c.members), c.GroupEpoch)
	}
}

func TestConsumerNewPartitionsBumpEpoch(t *testing.T) {
	c := testConsumer()
	now := time.Unix(1000, 0)
	r := join(t, c, "m1", testTopics(2, 0), now)
	c.RefreshMetadata(testTopics(4, 0))
	if c.GroupEpoch != 2 {
		t.Fatalf("group epoch %d after new partitions, want 2", c.GroupEpoch)
	}
	r = beat(t, c, "m1", r.MemberEpoch, r.Assignment, testTopics(4, 0), now)
	if r.MemberEpoch != 2 || r.Assignment.Len() != 4 {
		t.Fatalf("after new partitions: epoch %d, %d partitions", r.MemberEpoch, r.Assignment.Len())
	}
}

func TestConsumerRegexSubscription(t *testing.T) {
	c := testConsumer()
	now := time.Unix(1000, 0)
	re := "a|b"
	res, err := c.Heartbeat(ConsumerHeartbeat{MemberID: "m1", MemberEpoch: 0, RebalanceTimeout: time.Minute, SubscribedRegex: &re, Owned: Assignment{}}, testTopics(2, 3), now)
	if err != nil || res.Assignment.Len() != 5 {
		t.Fatalf("regex join: %+v %v", res, err)
	}
}

func TestAssignors(t *testing.T) {
	cases := []struct {
		name     string
		assignor string
		members  []AssignorMember
		want     map[string]int
	}{
		{"uniform even", "uniform", []AssignorMember{{ID: "a", Topics: []TopicInfo{{ID: tidA, Partitions: 6}}}, {ID: "b", Topics: []TopicInfo{{ID: tidA, Partitions: 6}}}}, map[string]int{"a": 3, "b": 3}},
		{"uniform uneven", "uniform", []AssignorMember{{ID: "a", Topics: []TopicInfo{{ID: tidA, Partitions: 5}}}, {ID: "b", Topics: []TopicInfo{{ID: tidA, Partitions: 5}}}, {ID: "c", Topics: []TopicInfo{{ID: tidA, Partitions: 5}}}}, map[string]int{"a": 2, "b": 2, "c": 1}},
		{"uniform sticky", "uniform", []AssignorMember{{ID: "a", Topics: []TopicInfo{{ID: tidA, Partitions: 4}}, Previous: Assignment{tidA: {0, 1, 2, 3}}}, {ID: "b", Topics: []TopicInfo{{ID: tidA, Partitions: 4}}}}, map[string]int{"a": 2, "b": 2}},
		{"uniform heterogeneous", "uniform", []AssignorMember{{ID: "a", Topics: []TopicInfo{{ID: tidA, Partitions: 4}}}, {ID: "b", Topics: []TopicInfo{{ID: tidA, Partitions: 4}, {ID: tidB, Partitions: 2}}}}, map[string]int{"a": 3, "b": 3}},
		{"range", "range", []AssignorMember{{ID: "a", Topics: []TopicInfo{{ID: tidA, Partitions: 5}}}, {ID: "b", Topics: []TopicInfo{{ID: tidA, Partitions: 5}}}}, map[string]int{"a": 3, "b": 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Assign(tc.assignor, tc.members)
			seen := map[tp]bool{}
			for id, n := range tc.want {
				if got[id].Len() != n {
					t.Fatalf("%s got %d partitions, want %d (%v)", id, got[id].Len(), n, got)
				}
				for tid, ps := range got[id] {
					for _, p := range ps {
						if seen[tp{tid, p}] {
							t.Fatalf("partition %d assigned twice", p)
						}
						seen[tp{tid, p}] = true
					}
				}
			}
			if tc.name == "uniform sticky" {
				for _, p := range got["a"][tidA] {
					if p > 3 {
						t.Fatalf("bad partition")
					}
				}
				if got["a"].Len() != 2 || !isSubset(got["a"], Assignment{tidA: {0, 1, 2, 3}}) {
					t.Fatalf("not sticky: %v", got["a"])
				}
			}
		})
	}
}

func TestConsumerRecordsRoundTrip(t *testing.T) {
	c := testConsumer()
	now := time.Unix(1000, 0)
	topics := testTopics(6, 0)
	r1 := join(t, c, "m1", topics, now)
	join(t, c, "m2", topics, now)
	beat(t, c, "m1", 1, r1.Assignment, topics, now)
	recs := c.TakeRecords()
	snap := NewConsumerSnapshot()
	for _, kv := range recs {
		e, err := Decode(kv.Key, kv.Value)
		if err != nil || e.Consumer == nil || e.Group != "g" {
			t.Fatalf("decode: %+v %v", e, err)
		}
		if err := snap.Apply(e.Consumer); err != nil {
			t.Fatal(err)
		}
	}
	r := restoreConsumer("g", snap, c.cfg, now)
	if r.GroupEpoch != c.GroupEpoch || r.AssignmentEpoch != c.AssignmentEpoch || len(r.members) != 2 {
		t.Fatalf("restored epochs %d/%d members %d; want %d/%d 2", r.GroupEpoch, r.AssignmentEpoch, len(r.members), c.GroupEpoch, c.AssignmentEpoch)
	}
	for id, m := range c.members {
		rm := r.members[id]
		if rm.Epoch != m.Epoch || rm.State != m.State || !rm.Assigned.Equal(m.Assigned) || !rm.PendingRevocation.Equal(m.PendingRevocation) || !r.target[id].Equal(c.target[id]) {
			t.Fatalf("member %s restored as %+v, was %+v", id, rm, m)
		}
	}
	// Leaving writes the member's tombstones.
	if _, err := c.Heartbeat(ConsumerHeartbeat{MemberID: "m2", MemberEpoch: LeaveEpoch, RebalanceTimeout: -1}, topics, now); err != nil {
		t.Fatal(err)
	}
	tombs := 0
	for _, kv := range c.TakeRecords() {
		e, _ := Decode(kv.Key, kv.Value)
		if e.Tombstone {
			tombs++
			_ = snap.Apply(e.Consumer)
		}
	}
	if tombs != 3 || len(snap.Members) != 1 {
		t.Fatalf("%d tombstones, %d members left", tombs, len(snap.Members))
	}
}

func TestConsumerValidateCommit(t *testing.T) {
	c := testConsumer()
	r := join(t, c, "m1", testTopics(2, 0), time.Unix(1000, 0))
	cases := []struct {
		name          string
		member        string
		epoch         int32
		version       int16
		transactional bool
		want          *kerr.Error
	}{
		{"current epoch", "m1", r.MemberEpoch, 9, false, nil},
		{"stale epoch", "m1", r.MemberEpoch - 1, 10, false, kerr.StaleMemberEpoch},
		{"old version", "m1", r.MemberEpoch, 8, false, kerr.UnsupportedVersion},
		{"old version, transactional", "m1", r.MemberEpoch, -1, true, nil},
		{"unknown member", "zz", r.MemberEpoch, 9, false, kerr.UnknownMemberID},
		{"simple commit to a group with members", "", -1, 9, false, kerr.UnknownMemberID},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := c.ValidateCommit(tc.member, tc.epoch, tc.version, tc.transactional)
			if (tc.want == nil && err != nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	empty := testConsumer()
	if err := empty.ValidateCommit("", -1, 9, false); err != nil {
		t.Fatalf("simple commit to an empty group: %v", err)
	}
}
