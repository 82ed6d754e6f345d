package fetchsession

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/metadata"
)

// sessionImage is an image with topic "a" (3 partitions) and "b" (1).
func sessionImage() *metadata.Image {
	img := &metadata.Image{Topics: map[string]*metadata.Topic{}, TopicsByID: map[[16]byte]*metadata.Topic{}}
	for i, name := range []string{"a", "b"} {
		t := &metadata.Topic{Name: name, ID: [16]byte{byte(i + 1)}}
		for range 3 - 2*i {
			t.Partitions = append(t.Partitions, &metadata.Partition{})
		}
		img.Topics[name], img.TopicsByID[t.ID] = t, t
	}
	return img
}

// sessionFetch is a v12 fetch of the given topic → partitions at offset 0.
func sessionFetch(id, epoch int32, parts map[string][]int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.SessionID, req.SessionEpoch = 12, -1, id, epoch
	topics := make([]string, 0, len(parts))
	for t := range parts {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	for _, t := range topics {
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = t
		for _, p := range parts[t] {
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.Partition, fp.PartitionMaxBytes = p, 1<<20
			ft.Partitions = append(ft.Partitions, fp)
		}
		req.Topics = append(req.Topics, ft)
	}
	return req
}

// answer is a full response to req: every partition with high watermark
// hw[topic/partition] (0 if absent) and records where data names them.
func answer(req *kmsg.FetchRequest, hw map[string]int64, data map[string]bool) *kmsg.FetchResponse {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewFetchResponseTopicPartition()
			key := fmt.Sprintf("%s/%d", t.Topic, p.Partition)
			rp.Partition, rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = p.Partition, hw[key], hw[key], 0
			rp.RecordBatches = []byte{}
			if data[key] {
				rp.RecordBatches = []byte{1}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// names lists a response's partitions as topic/partition.
func names(resp *kmsg.FetchResponse) []string {
	var out []string
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out = append(out, fmt.Sprintf("%s/%d", t.Topic, p.Partition))
		}
	}
	return out
}

func readNames(req *kmsg.FetchRequest) []string {
	var out []string
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			out = append(out, fmt.Sprintf("%s/%d@%d", t.Topic, p.Partition, p.FetchOffset))
		}
	}
	return out
}

// The life of a session: opened by a full fetch, incremental fetches
// answer only what changed, read every cached partition, add and forget
// partitions, move partitions that returned data to the back; wrong
// epochs, unknown ids and other principals are refused; closing works.
func TestFetchSessionLifecycle(t *testing.T) {
	img := sessionImage()
	c := NewCache(10)
	now := time.Unix(1000, 0)

	// Open: a full response, carrying the new id.
	open := sessionFetch(0, 0, map[string][]int32{"a": {0, 1, 2}, "nosuch": {0}})
	fc := c.Begin(open, img, "User:alice", false, now)
	resp := fc.Finish(answer(fc.Read, map[string]int64{"a/0": 5}, map[string]bool{"a/0": true}), img, now)
	id := resp.SessionID
	if id <= 0 || len(names(resp)) != 4 {
		t.Fatalf("opening fetch: session %d, partitions %v", id, names(resp))
	}
	if s, parts, _ := c.Stats(); s != 1 || parts != 3 {
		t.Fatalf("cache holds %d sessions, %d partitions; want 1, 3 (the unknown topic is not cached)", s, parts)
	}

	// Incremental, nothing new: nothing answered, all three read.
	inc := sessionFetch(id, 1, nil)
	fc = c.Begin(inc, img, "User:alice", false, now)
	if got := readNames(fc.Read); !slices.Equal(got, []string{"a/0@0", "a/1@0", "a/2@0"}) {
		t.Fatalf("incremental fetch reads %v", got)
	}
	resp = fc.Finish(answer(fc.Read, map[string]int64{"a/0": 5}, nil), img, now)
	if got := names(resp); len(got) != 0 || resp.SessionID != id {
		t.Fatalf("unchanged partitions answered: %v (session %d)", got, resp.SessionID)
	}

	// New fetch offset for a/0, a/1 gets data and a new high watermark,
	// b/0 is added: a/1 and b/0 answered, a/1 moves to the back.
	inc = sessionFetch(id, 2, map[string][]int32{"b": {0}})
	inc.Topics = append(inc.Topics, kmsg.FetchRequestTopic{Topic: "a", Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 0, FetchOffset: 5, PartitionMaxBytes: 1 << 20}}})
	fc = c.Begin(inc, img, "User:alice", false, now)
	if got := readNames(fc.Read); !slices.Equal(got, []string{"a/0@5", "a/1@0", "a/2@0", "b/0@0"}) {
		t.Fatalf("incremental fetch reads %v", got)
	}
	resp = fc.Finish(answer(fc.Read, map[string]int64{"a/0": 5, "a/1": 3}, map[string]bool{"a/1": true}), img, now)
	if got := names(resp); !slices.Equal(got, []string{"a/1", "b/0"}) {
		t.Fatalf("incremental answer %v, want [a/1 b/0]", got)
	}

	// Forget a/2; the order is now a/0, b/0, a/1.
	inc = sessionFetch(id, 3, nil)
	inc.ForgottenTopics = []kmsg.FetchRequestForgottenTopic{{Topic: "a", Partitions: []int32{2}}}
	fc = c.Begin(inc, img, "User:alice", false, now)
	if got := readNames(fc.Read); !slices.Equal(got, []string{"a/0@5", "b/0@0", "a/1@0"}) {
		t.Fatalf("after forgetting a/2 the fetch reads %v", got)
	}
	fc.Finish(answer(fc.Read, map[string]int64{"a/0": 5, "a/1": 3}, nil), img, now)

	// An error is always answered, and the next success carries all.
	fc = c.Begin(sessionFetch(id, 4, nil), img, "User:alice", false, now)
	errResp := answer(fc.Read, map[string]int64{"a/0": 5, "a/1": 3}, nil)
	errResp.Topics[0].Partitions[0].ErrorCode = kerr.NotLeaderForPartition.Code
	if got := names(fc.Finish(errResp, img, now)); !slices.Equal(got, []string{"a/0"}) {
		t.Fatalf("answer with an error: %v", got)
	}
	fc = c.Begin(sessionFetch(id, 5, nil), img, "User:alice", false, now)
	if got := names(fc.Finish(answer(fc.Read, map[string]int64{"a/0": 5, "a/1": 3}, nil), img, now)); !slices.Equal(got, []string{"a/0"}) {
		t.Fatalf("answer after the error: %v, want a/0 again", got)
	}

	for _, tc := range []struct {
		name      string
		id, epoch int32
		principal string
		version   int16
		want      int16
	}{
		{"old epoch", id, 5, "User:alice", 12, kerr.InvalidFetchSessionEpoch.Code},
		{"future epoch", id, 9, "User:alice", 12, kerr.InvalidFetchSessionEpoch.Code},
		{"unknown id", id + 1, 6, "User:alice", 12, kerr.FetchSessionIDNotFound.Code},
		{"another principal", id, 6, "User:mallory", 12, kerr.FetchSessionIDNotFound.Code},
		{"topic ids on a names session", id, 6, "User:alice", 13, kerr.FetchSessionTopicIDError.Code},
	} {
		req := sessionFetch(tc.id, tc.epoch, nil)
		req.Version = tc.version
		fc := c.Begin(req, img, tc.principal, false, now)
		if resp := fc.Finish(nil, img, now); resp.ErrorCode != tc.want || len(resp.Topics) != 0 {
			t.Errorf("%s: error %d with %d topics, want %d", tc.name, resp.ErrorCode, len(resp.Topics), tc.want)
		}
	}

	// Another principal cannot close it; its owner can.
	c.Begin(sessionFetch(id, sessionEpochClosed, nil), img, "User:mallory", false, now)
	if s, _, _ := c.Stats(); s != 1 {
		t.Fatalf("another principal closed the session")
	}
	fc = c.Begin(sessionFetch(id, sessionEpochClosed, map[string][]int32{"a": {0}}), img, "User:alice", false, now)
	if resp := fc.Finish(answer(fc.Read, nil, nil), img, now); resp.SessionID != 0 || len(names(resp)) != 1 {
		t.Fatalf("closing fetch: session %d, %v", resp.SessionID, names(resp))
	}
	if s, parts, _ := c.Stats(); s != 0 || parts != 0 {
		t.Fatalf("after closing: %d sessions, %d partitions", s, parts)
	}
}

// A full cache evicts a session idle for two minutes; otherwise only a
// follower may take a consumer's slot; otherwise the fetch goes without.
func TestFetchSessionEviction(t *testing.T) {
	img := sessionImage()
	now := time.Unix(1000, 0)
	openAt := func(c *Cache, follower bool, at time.Time) int32 {
		fc := c.Begin(sessionFetch(0, 0, map[string][]int32{"a": {0}}), img, "User:x", follower, at)
		return fc.Finish(answer(fc.Read, nil, nil), img, at).SessionID
	}
	for _, tc := range []struct {
		name       string
		existing   bool // the session in the cache is a follower's
		follower   bool // the new one is
		after      time.Duration
		wantOpened bool
	}{
		{"consumer replaces a recent consumer", false, false, time.Second, false},
		{"consumer replaces an idle consumer", false, false, 3 * time.Minute, true},
		{"follower replaces a recent consumer", false, true, time.Second, true},
		{"follower replaces a recent follower", true, true, time.Second, false},
		{"consumer replaces an idle follower", true, false, 3 * time.Minute, true},
	} {
		c := NewCache(1)
		first := openAt(c, tc.existing, now)
		second := openAt(c, tc.follower, now.Add(tc.after))
		if first == 0 || (second != 0) != tc.wantOpened {
			t.Errorf("%s: sessions %d then %d, want the second opened: %v", tc.name, first, second, tc.wantOpened)
		}
		if _, _, ev := c.Stats(); (ev == 1) != tc.wantOpened {
			t.Errorf("%s: %d evictions", tc.name, ev)
		}
	}
	if id := openAt(NewCache(0), false, now); id != 0 {
		t.Errorf("with no slots a session %d was opened", id)
	}
}

// A fetcher must find every partition it named in its session, or it
// would never have it read again while it leaves it out: a follower's
// partition of a topic this broker's image does not know yet is cached
// (brokers apply a new topic at different times), a consumer's
// partition that turns out known when read is cached then, and a
// follower's partition named again is always answered (it names one
// again when it could not use the last answer).
func TestFetchSessionNamedPartitionsStayRead(t *testing.T) {
	img := sessionImage()
	now := time.Unix(1000, 0)
	c := NewCache(10)

	// A follower opens a session naming a/0 and "new"/0, unknown here.
	open := sessionFetch(0, 0, map[string][]int32{"a": {0}, "new": {0}})
	open.ReplicaID = 2
	fc := c.Begin(open, img, "User:broker", true, now)
	resp := fc.Finish(answer(fc.Read, map[string]int64{"a/0": 5}, nil), img, now)
	id := resp.SessionID
	if _, parts, _ := c.Stats(); id == 0 || parts != 2 {
		t.Fatalf("follower session %d caches %d partitions, want 2 (the unknown topic too)", id, parts)
	}
	inc := sessionFetch(id, 1, nil)
	inc.ReplicaID = 2
	fc = c.Begin(inc, img, "User:broker", true, now)
	if got := readNames(fc.Read); !slices.Equal(got, []string{"a/0@0", "new/0@0"}) {
		t.Fatalf("incremental follower fetch reads %v, want the topic unknown at opening too", got)
	}
	fc.Finish(answer(fc.Read, map[string]int64{"a/0": 5, "new/0": 0}, nil), img, now)

	// Named again with nothing changed: answered (followers only).
	inc = sessionFetch(id, 2, map[string][]int32{"a": {0}})
	inc.ReplicaID = 2
	fc = c.Begin(inc, img, "User:broker", true, now)
	if got := names(fc.Finish(answer(fc.Read, map[string]int64{"a/0": 5, "new/0": 0}, nil), img, now)); !slices.Equal(got, []string{"a/0"}) {
		t.Fatalf("a follower's re-named partition answered as %v, want [a/0]", got)
	}

	// A consumer's partition unknown at begin but read without an error
	// (the image caught up meanwhile) is cached by the answer.
	copen := sessionFetch(0, 0, map[string][]int32{"a": {1}})
	fc = c.Begin(copen, img, "User:alice", false, now)
	cid := fc.Finish(answer(fc.Read, map[string]int64{"a/1": 1}, nil), img, now).SessionID
	cinc := sessionFetch(cid, 1, map[string][]int32{"late": {0}})
	fc = c.Begin(cinc, img, "User:alice", false, now)
	if got := names(fc.Finish(answer(fc.Read, map[string]int64{"a/1": 1, "late/0": 3}, nil), img, now)); !slices.Equal(got, []string{"late/0"}) {
		t.Fatalf("late-known partition answered as %v", got)
	}
	fc = c.Begin(sessionFetch(cid, 2, nil), img, "User:alice", false, now)
	if got := readNames(fc.Read); !slices.Equal(got, []string{"a/1@0", "late/0@0"}) {
		t.Fatalf("after it was answered the consumer session reads %v, want late/0 too", got)
	}
}
