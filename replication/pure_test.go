package replication

import (
	"github.com/kbroker/kbroker/internal/testutil"
	"slices"
	"testing"
	"time"
)

func TestTruncationOffset(t *testing.T) {
	const U, UO = int32(-1), int64(-1)
	cases := []struct {
		name            string
		lEpoch          int32
		lEnd            int64
		fEpoch          int32
		fEnd, fLEO, fHW int64
		want            int64
		wantDone        bool
	}{
		{"same epoch, leader shorter (KIP-101)", 0, 4, 0, 6, 6, 4, 4, true},
		{"same epoch, follower shorter", 3, 10, 3, 8, 8, 5, 8, true},
		{"same epoch, follower's epoch ended earlier", 3, 10, 3, 7, 12, 5, 7, true},
		{"leader has no such epoch: high watermark", U, UO, U, UO, 9, 5, 5, true},
		{"leader epoch undefined, offset known", U, 6, U, UO, 9, 5, 6, true},
		{"follower has no epoch <= leader's", 2, 6, U, UO, 9, 0, 6, true},
		{"follower never saw the leader's epoch (KIP-279)", 2, 9, 1, 5, 9, 3, 5, false},
		{"never above the follower's end", 5, 100, 5, 100, 40, 0, 40, true},
	}
	for _, c := range cases {
		got, done := TruncationOffset(c.lEpoch, c.lEnd, c.fEpoch, c.fEnd, c.fLEO, c.fHW)
		if got != c.want || done != c.wantDone {
			t.Errorf("%s: TruncationOffset = %d, %v; want %d, %v", c.name, got, done, c.want, c.wantDone)
		}
	}
}

func TestLaggingReplicas(t *testing.T) {
	now := time.Unix(1000, 0)
	lag := 10 * time.Second
	caught := map[int32]time.Time{2: now.Add(-5 * time.Second), 3: now.Add(-11 * time.Second), 4: now.Add(-10 * time.Second)}
	cases := []struct {
		name string
		isr  []int32
		want []int32
	}{
		{"leader alone", []int32{1}, nil},
		{"recent follower stays", []int32{1, 2}, nil},
		{"lagging follower goes", []int32{1, 2, 3}, []int32{3}},
		{"exactly at the limit stays", []int32{1, 4}, nil},
		{"unknown follower goes", []int32{1, 5}, []int32{5}},
		{"order kept", []int32{5, 1, 3, 2}, []int32{5, 3}},
	}
	for _, c := range cases {
		if got := LaggingReplicas(1, c.isr, caught, now, lag); !slices.Equal(got, c.want) {
			t.Errorf("%s: LaggingReplicas = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestCanJoinISR(t *testing.T) {
	cases := []struct {
		fetch, hw, epochStart int64
		want                  bool
	}{
		{10, 10, 5, true}, {11, 10, 5, true}, {9, 10, 5, false}, {10, 10, 12, false}, {12, 10, 12, true},
	}
	for _, c := range cases {
		if got := CanJoinISR(c.fetch, c.hw, c.epochStart); got != c.want {
			t.Errorf("CanJoinISR(%d, %d, %d) = %v", c.fetch, c.hw, c.epochStart, got)
		}
	}
}

func TestCaughtUpTime(t *testing.T) {
	t0 := time.Unix(100, 0)
	prev, now := t0.Add(time.Second), t0.Add(2*time.Second)
	cases := []struct {
		name       string
		fetch, leo int64
		prevLEO    int64
		want       time.Time
	}{
		{"at the leader's end", 10, 10, 8, now},
		{"reached the end of the previous fetch", 9, 10, 8, prev},
		{"behind both", 7, 10, 8, t0},
		{"no previous fetch", 9, 10, -1, t0},
	}
	for _, c := range cases {
		if got := CaughtUpTime(t0, c.fetch, c.leo, now, prev, c.prevLEO); !got.Equal(c.want) {
			t.Errorf("%s: CaughtUpTime = %v, want %v", c.name, got, c.want)
		}
	}
}

// The leader-side checks of a follower fetch.
func TestReadForFollowerChecks(t *testing.T) {
	c := newTestCluster(t, 1, 2, 3)
	c.images.elect(t, "orders", 0, []int32{1, 2}, 1, 1, 2)
	n1 := c.start(1)
	testutil.Eventually(t, 10*time.Second, func() bool { _, err := n1.m.LeaderPartition(tp0); return err == nil }, "leader")
	n1.produce(t, tp0, 1, 3, "a")
	now := time.Now()
	read := func(replica int32, tp TopicPartition, offset int64, epoch, lastEpoch int32) (FollowerFetchResult, error) {
		return n1.m.readForFollower(followerFetch{replicaID: replica, brokerEpoch: -1, tp: tp, fetchOffset: offset,
			currentLeaderEpoch: epoch, lastFetchedEpoch: lastEpoch, maxBytes: 1 << 20, minOneBatch: true}, n1.m.CheckFollowerBroker(replica, -1), now, nil, &FollowerReadSeen{})
	}
	cases := []struct {
		name          string
		replica       int32
		tp            TopicPartition
		offset        int64
		epoch, lastEp int32
		wantErr       error
		wantDivEpoch  int32
		wantDivEnd    int64
		wantRecords   bool
	}{
		{"ok", 2, tp0, 0, 0, -1, nil, -1, -1, true},
		{"at the end", 2, tp0, 3, 0, 0, nil, -1, -1, false},
		{"fenced epoch", 2, tp0, 0, -2 + 1, -1, nil, -1, -1, true}, // -1: no check
		{"newer epoch", 2, tp0, 0, 1, -1, ErrUnknownLeaderEpoch, -1, -1, false},
		// Kafka: the follower may know of a reassignment the leader has
		// not applied yet, so with a leader epoch it is told to retry.
		{"not a replica, with a leader epoch", 3, tp0, 0, 0, -1, ErrUnknownLeaderEpoch, -1, -1, false},
		{"not a replica, no leader epoch", 3, tp0, 0, -1, -1, ErrNotLeader, -1, -1, false},
		{"this broker", 1, tp0, 0, 0, -1, ErrNotLeader, -1, -1, false},
		{"unknown partition", 2, TopicPartition{"nope", 0}, 0, 0, -1, ErrUnknownTopicOrPartition, -1, -1, false},
		{"past the end", 2, tp0, 9, 0, -1, ErrOffsetOutOfRangeForTest, -1, -1, false},
		{"diverging: epoch unknown to the leader", 2, tp0, 5, 0, 7, nil, -1, -1, false},
	}
	for _, tc := range cases {
		res, err := read(tc.replica, tc.tp, tc.offset, tc.epoch, tc.lastEp)
		if tc.wantErr != nil {
			if !errorsIs(err, tc.wantErr) {
				t.Errorf("%s: err %v, want %v", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if res.DivergingEpoch != tc.wantDivEpoch || res.DivergingEndOffset != tc.wantDivEnd || (len(res.Records) > 0) != tc.wantRecords {
			t.Errorf("%s: diverging %d/%d, %d bytes", tc.name, res.DivergingEpoch, res.DivergingEndOffset, len(res.Records))
		}
	}
	// A new leader epoch: the old one is fenced.
	c.images.elect(t, "orders", 0, []int32{1, 2}, 1, 1, 2)
	testutil.Eventually(t, 10*time.Second, func() bool { return n1.partition(t, tp0).State().LeaderEpoch == 1 }, "epoch 1")
	if _, err := read(2, tp0, 0, 0, -1); !errorsIs(err, ErrFencedLeaderEpoch) {
		t.Fatalf("old epoch: %v", err)
	}
	// Epoch 0 ended at 3 on the leader: a follower at 5 in epoch 0 diverges.
	res, err := read(2, tp0, 5, 1, 0)
	if err != nil || res.DivergingEpoch != 0 || res.DivergingEndOffset != 3 || len(res.Records) != 0 {
		t.Fatalf("divergence: %+v, %v", res, err)
	}
	// OffsetForLeaderEpoch for the current epoch before any write in it.
	if ep, end, err := n1.m.EndOffsetForEpoch(tp0, 1, 1); err != nil || ep != 1 || end != 3 {
		t.Fatalf("EndOffsetForEpoch(1) = %d, %d, %v", ep, end, err)
	}
	if ep, end, err := n1.m.EndOffsetForEpoch(tp0, -1, 0); err != nil || ep != 0 || end != 3 {
		t.Fatalf("EndOffsetForEpoch(0) = %d, %d, %v", ep, end, err)
	}
	if _, _, err := n1.m.EndOffsetForEpoch(tp0, 0, 0); !errorsIs(err, ErrFencedLeaderEpoch) {
		t.Fatalf("EndOffsetForEpoch with an old current epoch: %v", err)
	}
}
