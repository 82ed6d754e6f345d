package replication

import (
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// named lists a request's partitions as topic/partition@offset.
func namedIn(req *kmsg.FetchRequest) []string {
	var out []string
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			out = append(out, fmt.Sprintf("%s/%d@%d", t.Topic, p.Partition, p.FetchOffset))
		}
	}
	slices.Sort(out)
	return out
}

func forgottenIn(req *kmsg.FetchRequest) []string {
	var out []string
	for _, t := range req.ForgottenTopics {
		for _, p := range t.Partitions {
			out = append(out, fmt.Sprintf("%s/%d", t.Topic, p))
		}
	}
	slices.Sort(out)
	return out
}

// The follower's session: a full request names every partition ready;
// incremental ones name only the partitions whose fetch state changed
// (or that are new, re-added or stale) and forget those no longer
// ready; session errors and failed requests start over with a full
// request closing the old session.
func TestFollowerFetchSession(t *testing.T) {
	fps := map[string]*fetchPartition{}
	want := func(offsets map[string]int64) []wantedPartition {
		var out []wantedPartition
		for name, off := range offsets {
			var topic string
			var p int32
			if _, err := fmt.Sscanf(name, "%1s/%d", &topic, &p); err != nil {
				t.Fatal(err)
			}
			fp := fps[name]
			if fp == nil {
				fp = &fetchPartition{}
				fps[name] = fp
			}
			out = append(out, wantedPartition{tp: TopicPartition{topic, p}, state: sessionState{
				fp: fp, fetchOffset: off, currentLeaderEpoch: 3, lastFetchedEpoch: 3, maxBytes: 1 << 20}})
		}
		return out
	}
	s := newFetchSession(false)
	type step struct {
		name       string
		wanted     map[string]int64
		before     func()
		wantID     int32
		wantEpoch  int32
		wantNamed  []string
		wantForgot []string
		resp       *kmsg.FetchResponse // nil: a plain answer with session id 7
	}
	ok := func(id int32) *kmsg.FetchResponse {
		r := kmsg.NewPtrFetchResponse()
		r.SessionID = id
		return r
	}
	sessionErr := func(code int16) *kmsg.FetchResponse {
		r := kmsg.NewPtrFetchResponse()
		r.ErrorCode = code
		return r
	}
	all := map[string]int64{"a/0": 0, "a/1": 10, "a/2": 20, "b/0": 5}
	steps := []step{
		{name: "full, opening", wanted: all, wantID: 0, wantEpoch: 0,
			wantNamed: []string{"a/0@0", "a/1@10", "a/2@20", "b/0@5"}, resp: ok(7)},
		{name: "nothing changed", wanted: all, wantID: 7, wantEpoch: 1, resp: ok(7)},
		{name: "a/1 grew", wanted: map[string]int64{"a/0": 0, "a/1": 12, "a/2": 20, "b/0": 5},
			wantID: 7, wantEpoch: 2, wantNamed: []string{"a/1@12"}, resp: ok(7)},
		{name: "b/0 backs off: forgotten", wanted: map[string]int64{"a/0": 0, "a/1": 12, "a/2": 20},
			wantID: 7, wantEpoch: 3, wantForgot: []string{"b/0"}, resp: ok(7)},
		{name: "b/0 ready again: named", wanted: map[string]int64{"a/0": 0, "a/1": 12, "a/2": 20, "b/0": 5},
			wantID: 7, wantEpoch: 4, wantNamed: []string{"b/0@5"}, resp: ok(7)},
		{name: "a/2's answer not applied: named again", before: func() { s.markStale(TopicPartition{"a", 2}) },
			wanted: map[string]int64{"a/0": 0, "a/1": 12, "a/2": 20, "b/0": 5},
			wantID: 7, wantEpoch: 5, wantNamed: []string{"a/2@20"}, resp: ok(7)},
		{name: "a/0 re-added (new leader epoch state): named",
			before: func() { fps["a/0"] = &fetchPartition{} },
			wanted: map[string]int64{"a/0": 0, "a/1": 12, "a/2": 20, "b/0": 5},
			wantID: 7, wantEpoch: 6, wantNamed: []string{"a/0@0"},
			resp: sessionErr(kerr.InvalidFetchSessionEpoch.Code)},
		{name: "after INVALID_FETCH_SESSION_EPOCH: full, closing 7", wanted: map[string]int64{"a/0": 0, "a/1": 12},
			wantID: 7, wantEpoch: 0, wantNamed: []string{"a/0@0", "a/1@12"}, resp: ok(9)},
		{name: "the new session", wanted: map[string]int64{"a/0": 1, "a/1": 12},
			wantID: 9, wantEpoch: 1, wantNamed: []string{"a/0@1"}, resp: sessionErr(kerr.FetchSessionIDNotFound.Code)},
		{name: "after FETCH_SESSION_ID_NOT_FOUND: full, nothing to close", wanted: map[string]int64{"a/0": 1},
			wantID: 0, wantEpoch: 0, wantNamed: []string{"a/0@1"}, resp: ok(0)},
		{name: "the leader keeps no session: full again", wanted: map[string]int64{"a/0": 1},
			wantID: 0, wantEpoch: 0, wantNamed: []string{"a/0@1"}, resp: ok(4)},
		{name: "a failed request", wanted: map[string]int64{"a/0": 2},
			before: func() { s.reset() }, wantID: 4, wantEpoch: 0, wantNamed: []string{"a/0@2"}, resp: ok(5)},
	}
	for _, st := range steps {
		if st.before != nil {
			st.before()
		}
		req := kmsg.NewPtrFetchRequest()
		full := s.full()
		n := s.build(req, want(st.wanted))
		if req.SessionID != st.wantID || req.SessionEpoch != st.wantEpoch {
			t.Fatalf("%s: session (%d, %d), want (%d, %d)", st.name, req.SessionID, req.SessionEpoch, st.wantID, st.wantEpoch)
		}
		if got := namedIn(req); !slices.Equal(got, st.wantNamed) || n != len(got) {
			t.Fatalf("%s: named %v (%d), want %v", st.name, got, n, st.wantNamed)
		}
		if got := forgottenIn(req); !slices.Equal(got, st.wantForgot) {
			t.Fatalf("%s: forgot %v, want %v", st.name, got, st.wantForgot)
		}
		s.handleResponse(st.resp, full)
	}

	// Sessions off: every request full, without a session.
	off := newFetchSession(true)
	for range 2 {
		req := kmsg.NewPtrFetchRequest()
		off.build(req, want(all))
		if req.SessionID != 0 || req.SessionEpoch != -1 || len(namedIn(req)) != 4 {
			t.Fatalf("sessions off: (%d, %d) naming %v", req.SessionID, req.SessionEpoch, namedIn(req))
		}
		off.handleResponse(ok(0), true)
	}
}
