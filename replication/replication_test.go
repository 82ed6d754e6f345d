package replication

import (
	"bytes"
	"fmt"
	"github.com/kbroker/kbroker/internal/testutil"
	"slices"
	"sync"
	"testing"
	"time"
)

var tp0 = TopicPartition{Topic: "orders", Partition: 0}

// caughtUp reports whether follower has leader's log end offset and
// high watermark.
func caughtUp(t *testing.T, leader, follower *testNode) func() bool {
	return func() bool {
		lp, err1 := leader.m.Partition(tp0)
		fp, err2 := follower.m.Partition(tp0)
		return err1 == nil && err2 == nil && fp.LogEndOffset() == lp.LogEndOffset() &&
			fp.HighWatermark() == lp.HighWatermark() && lp.HighWatermark() == lp.LogEndOffset()
	}
}

func sameSegments(t *testing.T, a, b *testNode) {
	t.Helper()
	ab, bb := a.segmentBytes(t, tp0), b.segmentBytes(t, tp0)
	if len(ab) == 0 || !bytes.Equal(ab, bb) {
		t.Fatalf("segment files differ: node %d has %d bytes, node %d %d", a.id, len(ab), b.id, len(bb))
	}
}

func TestFollowerReplicatesByteForByte(t *testing.T) {
	c := newTestCluster(t, 1, 2, 3)
	c.images.elect(t, "orders", 0, []int32{1, 2, 3}, 1, 1, 2, 3)
	n1, n2, n3 := c.start(1), c.start(2), c.start(3)
	testutil.Eventually(t, 10*time.Second, func() bool { _, err := n1.m.LeaderPartition(tp0); return err == nil }, "partitions")
	n1.produce(t, tp0, -1, 50, "a")
	testutil.Eventually(t, 10*time.Second, caughtUp(t, n1, n2), "follower 2 caught up")
	testutil.Eventually(t, 10*time.Second, caughtUp(t, n1, n3), "follower 3 caught up")
	if hw := n1.partition(t, tp0).HighWatermark(); hw != 50 {
		t.Fatalf("high watermark %d, want 50", hw)
	}
	sameSegments(t, n1, n2)
	sameSegments(t, n1, n3)
	if got := c.images.partition("orders", 0).ISR; len(got) != 3 {
		t.Fatalf("ISR %v changed", got)
	}
}

// The high watermark (what acks=all waits for) moves only when every ISR
// member has fetched, and never backwards.
func TestHighWatermarkWaitsForISR(t *testing.T) {
	c := newTestCluster(t, 1, 2)
	c.images.elect(t, "orders", 0, []int32{1, 2}, 1, 1, 2)
	var mu sync.Mutex
	var seen, followerSeen []int64
	c.onHighWatermark = func(node int32, tp TopicPartition) {
		p, _ := c.node(node).m.Partition(tp)
		mu.Lock()
		defer mu.Unlock()
		if node == 1 {
			seen = append(seen, p.HighWatermark())
		} else {
			followerSeen = append(followerSeen, p.HighWatermark())
		}
	}
	n1 := c.start(1)
	testutil.Eventually(t, 10*time.Second, func() bool { _, err := n1.m.LeaderPartition(tp0); return err == nil }, "leader")
	lp := n1.partition(t, tp0)
	n1.produce(t, tp0, -1, 5, "a")
	// No follower has fetched: a new leader knows no follower's position.
	if hw := lp.HighWatermark(); hw != 0 {
		t.Fatalf("high watermark %d before the follower fetched", hw)
	}
	n2 := c.start(2)
	testutil.Eventually(t, 10*time.Second, caughtUp(t, n1, n2), "follower caught up")
	// The follower stops fetching: appends are no longer committed.
	c.setDown(1, true)
	c.stop(2)
	n1.produce(t, tp0, -1, 5, "b")
	if hw := lp.HighWatermark(); hw != 5 {
		t.Fatalf("high watermark %d while the follower is away, want 5", hw)
	}
	c.setDown(1, false)
	n2 = c.start(2)
	testutil.Eventually(t, 10*time.Second, caughtUp(t, n1, n2), "follower caught up again")
	sameSegments(t, n1, n2)
	mu.Lock()
	defer mu.Unlock()
	if !slices.IsSorted(seen) || len(seen) == 0 || seen[len(seen)-1] != 10 {
		t.Fatalf("high watermarks seen %v: not increasing to 10", seen)
	}
	if len(followerSeen) == 0 || followerSeen[len(followerSeen)-1] != 10 {
		t.Fatalf("follower high watermarks seen %v: not up to 10", followerSeen)
	}
}

func TestISRShrinkAndExpand(t *testing.T) {
	c := newTestCluster(t, 1, 2)
	c.lagMax = 200 * time.Millisecond
	c.images.elect(t, "orders", 0, []int32{1, 2}, 1, 1, 2)
	n1, n2 := c.start(1), c.start(2)
	testutil.Eventually(t, 10*time.Second, func() bool { _, err := n1.m.LeaderPartition(tp0); return err == nil }, "leader")
	n1.produce(t, tp0, -1, 3, "a")
	testutil.Eventually(t, 10*time.Second, caughtUp(t, n1, n2), "follower caught up")
	start := time.Now()
	c.setDown(1, true)
	c.stop(2)
	n1.produce(t, tp0, 1, 3, "b")
	testutil.Eventually(t, 10*time.Second, func() bool { return slices.Equal(c.images.partition("orders", 0).ISR, []int32{1}) }, "ISR shrink")
	if d := time.Since(start); d < c.lagMax {
		t.Fatalf("ISR shrunk after %v, before replica.lag.time.max.ms", d)
	}
	// With the ISR down to the leader, the high watermark moves alone.
	testutil.Eventually(t, 10*time.Second, func() bool { return n1.partition(t, tp0).HighWatermark() == 6 }, "leader-only high watermark")
	c.setDown(1, false)
	n2 = c.start(2)
	testutil.Eventually(t, 10*time.Second, func() bool { return slices.Equal(c.images.partition("orders", 0).ISR, []int32{1, 2}) }, "ISR expand")
	testutil.Eventually(t, 10*time.Second, caughtUp(t, n1, n2), "follower caught up")
	sameSegments(t, n1, n2)
}

// KIP-101: the leader wrote batches nobody replicated, then failed; the
// other replica led a new epoch and wrote different batches at the same
// offsets. The old leader, back as a follower, truncates exactly the
// batches that were never replicated, and the logs end up identical.
func TestKIP101TruncateUnreplicated(t *testing.T) {
	for _, skip := range []bool{false, true} {
		name := "OffsetForLeaderEpoch"
		if skip {
			name = "DivergingEpoch"
		}
		t.Run(name, func(t *testing.T) {
			c := newTestCluster(t, 1, 2)
			c.skipEpochRequest = skip
			var mu sync.Mutex
			roles := map[int32]int{}
			c.onRoleChange = func(node int32, tp TopicPartition) {
				mu.Lock()
				roles[node]++
				mu.Unlock()
			}
			c.images.elect(t, "orders", 0, []int32{1, 2}, 1, 1, 2)
			n1, n2 := c.start(1), c.start(2)
			testutil.Eventually(t, 10*time.Second, func() bool { _, err := n1.m.LeaderPartition(tp0); return err == nil }, "leader")
			n1.produce(t, tp0, -1, 4, "a")
			testutil.Eventually(t, 10*time.Second, caughtUp(t, n1, n2), "replicated")
			// Replication stops; the leader writes two batches alone.
			c.setDown(1, true)
			n1.produce(t, tp0, 1, 2, "lost")
			c.stop(1)
			c.setDown(1, false)
			c.images.elect(t, "orders", 0, []int32{1, 2}, 2, 2)
			testutil.Eventually(t, 10*time.Second, func() bool { _, err := n2.m.LeaderPartition(tp0); return err == nil }, "new leader")
			// Follower in epoch 0, leader in epoch 1. The hook runs once
			// Apply has released its locks, after the partition's role
			// is visible.
			testutil.Eventually(t, 10*time.Second, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return roles[2] >= 2
			}, "node 2's role change hook")
			mu.Lock()
			if roles[2] != 2 {
				t.Errorf("node 2 saw %d role changes, want 2", roles[2])
			}
			mu.Unlock()
			n2.produce(t, tp0, 1, 3, "new")
			n1 = c.start(1)
			testutil.Eventually(t, 10*time.Second, func() bool {
				p, err := n1.m.Partition(tp0)
				return err == nil && p.LogEndOffset() == 7 && p.HighWatermark() == 7
			}, "old leader follows")
			sameSegments(t, n1, n2)
			// The new leader's ISR takes the old leader back.
			testutil.Eventually(t, 10*time.Second, func() bool { return len(c.images.partition("orders", 0).ISR) == 2 }, "ISR expand")
		})
	}
}

// KIP-279: a double failover leaves each replica with an epoch the other
// never saw. Replicas A=1 and B=2 share epoch 0 up to offset 3; A writes
// x alone and fails; B leads epoch 1, writes y alone and fails; A comes
// back and leads epoch 2 (unclean), writing z. B returns as follower: it
// asks for its epoch 1, A answers epoch 0 ending after x, and B must
// truncate to the end of its own epoch 0 (offset 3), not to A's answer.
func TestKIP279DoubleFailover(t *testing.T) {
	c := newTestCluster(t, 1, 2)
	c.images.elect(t, "orders", 0, []int32{1, 2}, 1, 1, 2)
	a, b := c.start(1), c.start(2)
	testutil.Eventually(t, 10*time.Second, func() bool { _, err := a.m.LeaderPartition(tp0); return err == nil }, "leader")
	a.produce(t, tp0, -1, 3, "shared")
	testutil.Eventually(t, 10*time.Second, caughtUp(t, a, b), "replicated")
	// A writes x alone and dies.
	c.setDown(1, true)
	a.produce(t, tp0, 1, 2, "x")
	c.stop(1)
	c.setDown(1, false)
	// B leads epoch 1, writes y alone and dies.
	c.images.elect(t, "orders", 0, []int32{1, 2}, 2, 2)
	testutil.Eventually(t, 10*time.Second, func() bool { _, err := b.m.LeaderPartition(tp0); return err == nil }, "B leads")
	b.produce(t, tp0, 1, 3, "y")
	c.stop(2)
	// A comes back and leads epoch 2 alone; writes z.
	c.images.elect(t, "orders", 0, []int32{1, 2}, 1, 1)
	a = c.start(1)
	testutil.Eventually(t, 10*time.Second, func() bool { _, err := a.m.LeaderPartition(tp0); return err == nil }, "A leads")
	a.produce(t, tp0, 1, 1, "z")
	// B comes back as follower. Its old log also ends at offset 6
	// (shared + y), so "caught up" alone would hold before it truncated:
	// wait until it holds A's epoch 2 batch.
	b = c.start(2)
	testutil.Eventually(t, 10*time.Second, func() bool {
		p, err := b.m.Partition(tp0)
		if err != nil {
			return false
		}
		epoch, ok := p.Log().LatestEpoch()
		return ok && epoch == 2 && caughtUp(t, a, b)()
	}, "B follows")
	sameSegments(t, a, b)
	if leo := b.partition(t, tp0).LogEndOffset(); leo != 6 {
		t.Fatalf("follower log end offset %d, want 6", leo)
	}
}

// A follower whose log ends before the leader's log start offset restarts
// its log at the leader's log start offset.
func TestFollowerBehindLeaderLogStart(t *testing.T) {
	c := newTestCluster(t, 1, 2)
	c.images.elect(t, "orders", 0, []int32{1, 2}, 1, 1)
	n1 := c.start(1)
	testutil.Eventually(t, 10*time.Second, func() bool { _, err := n1.m.LeaderPartition(tp0); return err == nil }, "leader")
	n1.produce(t, tp0, -1, 10, "old")
	lp := n1.partition(t, tp0)
	if _, err := lp.DeleteRecordsBefore(6); err != nil {
		t.Fatal(err)
	}
	n2 := c.start(2)
	testutil.Eventually(t, 10*time.Second, caughtUp(t, n1, n2), "follower caught up")
	fp := n2.partition(t, tp0)
	if fp.LogStartOffset() != 6 {
		t.Fatalf("follower log start offset %d, want 6", fp.LogStartOffset())
	}
	want, err := lp.Log().Read(6, 1<<20, 1<<62, true)
	if err != nil {
		t.Fatal(err)
	}
	got, err := fp.Log().Read(6, 1<<20, 1<<62, true)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("follower batches differ from the leader's")
	}
	testutil.Eventually(t, 10*time.Second, func() bool { return len(c.images.partition("orders", 0).ISR) == 2 }, "ISR expand")
	// Records the leader deletes later go on the follower too.
	if _, err := lp.DeleteRecordsBefore(8); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, func() bool { return fp.LogStartOffset() == 8 }, "follower log start offset 8")
}

// Concurrent producers on the leader while followers replicate: no
// deadlock, no race, identical logs.
func TestReplicateUnderConcurrentProduce(t *testing.T) {
	c := newTestCluster(t, 1, 2, 3)
	c.images.elect(t, "orders", 0, []int32{1, 2, 3}, 1, 1, 2, 3)
	n1, n2, n3 := c.start(1), c.start(2), c.start(3)
	testutil.Eventually(t, 10*time.Second, func() bool { _, err := n1.m.LeaderPartition(tp0); return err == nil }, "leader")
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() { n1.produce(t, tp0, -1, 50, fmt.Sprint("p", g)) })
	}
	wg.Wait()
	testutil.Eventually(t, 10*time.Second, caughtUp(t, n1, n2), "follower 2 caught up")
	testutil.Eventually(t, 10*time.Second, caughtUp(t, n1, n3), "follower 3 caught up")
	if leo := n1.partition(t, tp0).LogEndOffset(); leo != 200 {
		t.Fatalf("log end offset %d, want 200", leo)
	}
	sameSegments(t, n1, n2)
	sameSegments(t, n1, n3)
}
