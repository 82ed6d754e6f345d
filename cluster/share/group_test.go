package share

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

func join(t *testing.T, g *Group, id string, topics []string, parts map[string]int32, now time.Time) HeartbeatResult {
	t.Helper()
	res, _, err := g.Heartbeat(Heartbeat{MemberID: id, MemberEpoch: JoinEpoch, Topics: topics}, parts, now)
	if err != nil {
		t.Fatalf("join %s: %v", id, err)
	}
	return res
}

func TestShareAssignment(t *testing.T) {
	for _, tc := range []struct {
		name    string
		members int
		parts   int32
		want    map[string][]int32 // member -> partitions of topic "t"
	}{
		{"one member", 1, 3, map[string][]int32{"a": {0, 1, 2}}},
		{"fewer members than partitions", 2, 5, map[string][]int32{"a": {0, 2, 4}, "b": {1, 3}}},
		{"as many", 3, 3, map[string][]int32{"a": {0}, "b": {1}, "c": {2}}},
		{"more members than partitions: shared", 5, 2, map[string][]int32{"a": {0}, "b": {1}, "c": {0}, "d": {1}, "e": {0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewGroup("g", DefaultGroupConfig())
			parts := map[string]int32{"t": tc.parts}
			ids := []string{"a", "b", "c", "d", "e"}[:tc.members]
			for _, id := range ids {
				join(t, g, id, []string{"t"}, parts, t0)
			}
			got := map[string][]int32{}
			for _, id := range ids {
				// Each member learns its assignment at its next heartbeat.
				res, _, err := g.Heartbeat(Heartbeat{MemberID: id, MemberEpoch: g.members[id].Epoch}, parts, t0)
				if err != nil {
					t.Fatal(err)
				}
				if res.MemberEpoch != g.Epoch() {
					t.Fatalf("%s at epoch %d, group at %d", id, res.MemberEpoch, g.Epoch())
				}
				got[id] = g.members[id].Assignment["t"]
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("assignment %v, want %v", got, tc.want)
			}
		})
	}
}

func TestShareHeartbeatErrors(t *testing.T) {
	parts := map[string]int32{"t": 2}
	for _, tc := range []struct {
		name string
		hb   Heartbeat
		want error
	}{
		{"no member id", Heartbeat{MemberEpoch: JoinEpoch, Topics: []string{"t"}}, ErrInvalidHeartbeat},
		{"join without topics", Heartbeat{MemberID: "new", MemberEpoch: JoinEpoch}, ErrInvalidHeartbeat},
		{"unknown member", Heartbeat{MemberID: "x", MemberEpoch: 3}, ErrUnknownMemberID},
		{"unknown member leaves", Heartbeat{MemberID: "x", MemberEpoch: LeaveEpoch}, ErrUnknownMemberID},
		{"stale epoch", Heartbeat{MemberID: "a", MemberEpoch: 99}, ErrFencedMemberEpoch},
		{"group full", Heartbeat{MemberID: "c", MemberEpoch: JoinEpoch, Topics: []string{"t"}}, ErrGroupMaxSizeReached},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewGroup("g", GroupConfig{SessionTimeout: time.Minute, MaxSize: 2})
			join(t, g, "a", []string{"t"}, parts, t0)
			join(t, g, "b", []string{"t"}, parts, t0)
			if _, _, err := g.Heartbeat(tc.hb, parts, t0); !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
}

// A member whose answer was lost heartbeats with its previous epoch and
// is not fenced; leaving and expiring move the group on.
func TestShareMembership(t *testing.T) {
	g := NewGroup("g", GroupConfig{SessionTimeout: 45 * time.Second, MaxSize: 10})
	parts := map[string]int32{"t": 4}
	a := join(t, g, "a", []string{"t"}, parts, t0)
	if a.MemberEpoch != 1 || !reflect.DeepEqual(a.Assignment, map[string][]int32{"t": {0, 1, 2, 3}}) {
		t.Fatalf("first join: %+v", a)
	}
	join(t, g, "b", []string{"t"}, parts, t0)
	res, _, err := g.Heartbeat(Heartbeat{MemberID: "a", MemberEpoch: 1}, parts, t0.Add(time.Second))
	if err != nil || res.MemberEpoch != 2 || !reflect.DeepEqual(res.Assignment, map[string][]int32{"t": {0, 2}}) {
		t.Fatalf("a after b joined: %+v %v", res, err)
	}
	// The answer above was lost: a heartbeats at epoch 1 again.
	if _, _, err := g.Heartbeat(Heartbeat{MemberID: "a", MemberEpoch: 1}, parts, t0.Add(2*time.Second)); err != nil {
		t.Fatalf("previous epoch refused: %v", err)
	}
	// Partitions added: the epoch moves and the new ones are assigned.
	parts = map[string]int32{"t": 6}
	res, _, err = g.Heartbeat(Heartbeat{MemberID: "a", MemberEpoch: 2}, parts, t0.Add(3*time.Second))
	if err != nil || res.MemberEpoch != 3 || !reflect.DeepEqual(res.Assignment, map[string][]int32{"t": {0, 2, 4}}) {
		t.Fatalf("after partitions were added: %+v %v", res, err)
	}
	// b never heartbeats again: its session ends 45 s after its join.
	if gone := g.Expire(parts, t0.Add(44*time.Second)); len(gone) != 0 {
		t.Fatalf("expired early: %v", gone)
	}
	if gone := g.Expire(parts, t0.Add(45*time.Second)); !reflect.DeepEqual(gone, []string{"b"}) {
		t.Fatalf("expired %v, want [b]", gone)
	}
	res, _, _ = g.Heartbeat(Heartbeat{MemberID: "a", MemberEpoch: 3}, parts, t0.Add(46*time.Second))
	if !reflect.DeepEqual(res.Assignment, map[string][]int32{"t": {0, 1, 2, 3, 4, 5}}) {
		t.Fatalf("a alone: %+v", res)
	}
	_, gone, err := g.Heartbeat(Heartbeat{MemberID: "a", MemberEpoch: LeaveEpoch}, parts, t0.Add(47*time.Second))
	if err != nil || !reflect.DeepEqual(gone, []string{"a"}) || !g.Empty() {
		t.Fatalf("leave: %v %v, empty %v", gone, err, g.Empty())
	}
}
