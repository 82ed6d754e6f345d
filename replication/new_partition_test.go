package replication

import (
	"bytes"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testutil"
)

// names reports whether req names tp.
func names(req *kmsg.FetchRequest, tp TopicPartition) bool {
	for _, t := range req.Topics {
		if t.Topic != tp.Topic {
			continue
		}
		for _, p := range t.Partitions {
			if p.Partition == tp.Partition {
				return true
			}
		}
	}
	return false
}

// parkedFollower starts leader 1 and follower 2 with replica.fetch.wait.max.ms
// far beyond the test, replicates one record of "old"-0 and returns the
// follower's fetch then waiting at the leader: it would not be answered
// before the test ends unless "old"-0 gets records.
func parkedFollower(t *testing.T, c *testCluster) (n1, n2 *testNode, parked *kmsg.FetchRequest) {
	t.Helper()
	old := TopicPartition{Topic: "old", Partition: 0}
	c.images.elect(t, old.Topic, 0, []int32{1, 2}, 1, 1, 2)
	n1, n2 = c.start(1), c.start(2)
	testutil.Eventually(t, 10*time.Second, func() bool { _, err := n1.m.LeaderPartition(old); return err == nil }, "leader of %v", old)
	n1.produce(t, old, -1, 1, "old")
	lp := n1.partition(t, old)
	testutil.Eventually(t, 10*time.Second, func() bool { return lp.HighWatermark() == 1 }, "%v's high watermark 1", old)
	testutil.Eventually(t, 10*time.Second, func() bool {
		reqs := c.inFlight(2)
		if len(reqs) != 1 || reqs[0].MaxWaitMillis < 60_000 {
			return false
		}
		for _, tp := range reqs[0].Topics {
			for _, p := range tp.Partitions {
				if p.FetchOffset != 1 {
					return false
				}
			}
		}
		parked = reqs[0]
		return true
	}, "the follower's fetch at offset 1 to wait at the leader")
	return n1, n2, parked
}

// A partition a follower starts following while its fetcher's fetch
// waits at the leader (the new topic's partitions, in issue 14) is
// fetched at once, not when that fetch returns: a new topic's first
// acks=all produce waited up to replica.fetch.wait.max.ms (0.3-0.6 s at
// Kafka's 500 ms) for its followers to send a fetch naming the new
// partition. Here the waiting fetch would return only after ten minutes,
// so the new partition's high watermark can move only through a fetch
// sent while it waits, which the test checks is still waiting at the end.
func TestNewPartitionFetchedWhileFetchWaits(t *testing.T) {
	c := newTestCluster(t, 1, 2)
	c.fetchWaitMax = 10 * time.Minute
	n1, n2, parked := parkedFollower(t, c)
	before := n2.m.FollowerFetchStats()

	tp := TopicPartition{Topic: "new", Partition: 0}
	c.images.elect(t, tp.Topic, 0, []int32{1, 2}, 1, 1, 2)
	c.waitApplied(t, n1)
	n1.produce(t, tp, -1, 1, "new")
	lp := n1.partition(t, tp)
	testutil.Eventually(t, 30*time.Second, func() bool { return lp.HighWatermark() == 1 },
		"the new partition's high watermark to reach 1 (acks=all) while the follower's fetch waits")
	if !c.isFetching(parked) {
		t.Fatal("the follower's waiting fetch returned: the new partition may have waited for it")
	}
	if names(parked, tp) {
		t.Fatal("the waiting fetch names the new partition")
	}
	after := n2.m.FollowerFetchStats()
	if after.SideRequests == before.SideRequests {
		t.Fatalf("no side fetch: %+v", after)
	}
	// The follower has the record, and a second one commits too.
	n1.produce(t, tp, -1, 1, "new")
	testutil.Eventually(t, 30*time.Second, func() bool {
		fp, err := n2.m.Partition(tp)
		return lp.HighWatermark() == 2 && err == nil && fp.LogEndOffset() == 2
	}, "the second record to be replicated and committed")
	if !c.isFetching(parked) {
		t.Fatal("the follower's waiting fetch returned")
	}
}

// The leader refuses the first fetches of a new partition (it has not
// applied the image yet: UNKNOWN_TOPIC_OR_PARTITION, a retriable error).
// The follower retries after the partition's short backoff, while its
// other fetch still waits at the leader, rather than after it returns.
func TestNewPartitionRefusedThenRetriedWhileFetchWaits(t *testing.T) {
	c := newTestCluster(t, 1, 2)
	c.fetchWaitMax = 10 * time.Minute
	tp := TopicPartition{Topic: "new", Partition: 0}
	var mu sync.Mutex
	refused, asked := 0, 0
	c.fetchHook = func(_ int32, req *kmsg.FetchRequest, resp *kmsg.FetchResponse) bool {
		if !names(req, tp) {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		asked++
		if refused == 3 {
			return false
		}
		refused++
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				if rp := &resp.Topics[i].Partitions[j]; resp.Topics[i].Topic == tp.Topic && rp.Partition == tp.Partition {
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
					rp.RecordBatches = nil
				}
			}
		}
		return true
	}
	n1, _, parked := parkedFollower(t, c)

	c.images.elect(t, tp.Topic, 0, []int32{1, 2}, 1, 1, 2)
	c.waitApplied(t, n1)
	n1.produce(t, tp, -1, 1, "new")
	lp := n1.partition(t, tp)
	testutil.Eventually(t, 30*time.Second, func() bool { return lp.HighWatermark() == 1 },
		"the new partition's high watermark to reach 1 after the refusals")
	if !c.isFetching(parked) {
		t.Fatal("the follower's waiting fetch returned: the retries may have waited for it")
	}
	mu.Lock()
	defer mu.Unlock()
	if refused != 3 || asked < 5 {
		t.Fatalf("%d fetches named the new partition, %d refused; want the 3 refusals, then a fetch of the record and one at offset 1", asked, refused)
	}
}

// Once the fetch that was waiting returns, the partitions fetched on the
// side join the fetch session's requests: with Kafka's 500 ms wait (50 ms
// here) the new partition ends up in the fetcher's one request.
func TestSidePartitionsJoinTheSession(t *testing.T) {
	c := newTestCluster(t, 1, 2)
	c.fetchWaitMax = time.Second
	tp := TopicPartition{Topic: "new", Partition: 0}
	var mu sync.Mutex
	var both []int32 // MaxWaitMillis of requests naming old-0 and new-0
	c.fetchHook = func(_ int32, req *kmsg.FetchRequest, _ *kmsg.FetchResponse) bool {
		if names(req, tp) && names(req, TopicPartition{Topic: "old", Partition: 0}) {
			mu.Lock()
			both = append(both, req.MaxWaitMillis)
			mu.Unlock()
		}
		return false
	}
	c.images.elect(t, "old", 0, []int32{1, 2}, 1, 1, 2)
	n1, n2 := c.start(1), c.start(2)
	c.waitApplied(t, n1)
	c.waitApplied(t, n2)
	c.images.elect(t, tp.Topic, 0, []int32{1, 2}, 1, 1, 2)
	c.waitApplied(t, n1)
	n1.produce(t, tp, -1, 3, "new")
	lp := n1.partition(t, tp)
	testutil.Eventually(t, 30*time.Second, func() bool { return lp.HighWatermark() == 3 }, "high watermark 3")
	testutil.Eventually(t, 30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(both, int32(time.Second/time.Millisecond))
	}, "a session request naming both partitions")
}

// Partitions added one after another, each produced to at once, while
// every fetcher's session fetch waits at its leader for ten minutes, with
// a leader refusing connections for a while in the middle (the fetchers
// abandon their fetches in flight and redial): every partition commits
// its records through side fetches and its replicas end up identical.
func TestPartitionsAddedWhileFetchesWaitWithLeaderOutage(t *testing.T) {
	c := newTestCluster(t, 1, 2, 3)
	c.fetchWaitMax = 10 * time.Minute
	nodes := []*testNode{c.start(1), c.start(2), c.start(3)}
	all := []int32{1, 2, 3}
	var tps []TopicPartition
	want := map[TopicPartition]int64{}
	for i := range 9 {
		if i == 5 {
			// A record broker 1 appends while it refuses connections
			// wakes its followers' waiting fetches, which fail: the
			// fetchers abandon them and redial until it is back.
			c.setDown(1, true)
			nodes[0].produce(t, tps[0], 1, 1, "outage")
			want[tps[0]]++
			time.Sleep(100 * time.Millisecond)
			c.setDown(1, false)
		}
		leader := all[i%3]
		tp := TopicPartition{Topic: fmt.Sprintf("t%d", i), Partition: 0}
		tps = append(tps, tp)
		c.images.elect(t, tp.Topic, 0, all, leader, all...)
		for _, n := range nodes {
			c.waitApplied(t, n)
		}
		ln := nodes[leader-1]
		ln.produce(t, tp, -1, 2, tp.Topic)
		want[tp] += 2
		lp := ln.partition(t, tp)
		testutil.Eventually(t, 30*time.Second, func() bool { return lp.HighWatermark() == 2 }, "%v's high watermark 2", tp)
	}
	for i, tp := range tps {
		ln := nodes[all[i%3]-1]
		lp := ln.partition(t, tp)
		testutil.Eventually(t, 30*time.Second, func() bool { return lp.HighWatermark() == want[tp] },
			"%v's high watermark %d", tp, want[tp])
		for _, n := range nodes {
			testutil.Eventually(t, 30*time.Second, func() bool {
				p, err := n.m.Partition(tp)
				return err == nil && p.LogEndOffset() == want[tp]
			}, "node %d to have %v's %d records", n.id, tp, want[tp])
			if a, b := ln.segmentBytes(t, tp), n.segmentBytes(t, tp); !bytes.Equal(a, b) {
				t.Fatalf("%v: node %d's segments differ from the leader's", tp, n.id)
			}
		}
	}
}
