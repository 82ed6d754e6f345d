package metadata

import (
	"slices"
	"testing"

	"github.com/kbroker/kbroker/metadata/decisions"
)

func TestOfflineReplicaPartition(t *testing.T) {
	allBut := func(dead ...int32) func(int32) bool {
		return func(id int32) bool { return !slices.Contains(dead, id) }
	}
	for _, tc := range []struct {
		name       string
		p          Partition
		broker     int32
		others     func(int32) bool
		wantNil    bool
		wantLeader int32
		wantISR    []int32
	}{
		{"leader moves to the next ISR member", Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1}, 1, allBut(1), false, 2, []int32{2, 3}},
		{"skips a dead ISR member", Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1}, 1, allBut(1, 2), false, 3, []int32{2, 3}},
		{"follower leaves the ISR", Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1}, 3, allBut(3), false, 1, []int32{1, 2}},
		{"sole ISR member stays", Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1}, Leader: 1}, 1, allBut(1), true, 0, nil},
		{"no alive ISR member to take over", Partition{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1}, 1, allBut(1, 2), true, 0, nil},
		{"not a member", Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, Leader: 1}, 3, allBut(3), true, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.p
			before.ISR = slices.Clone(tc.p.ISR)
			n := decisions.OfflineReplica(&tc.p, tc.broker, tc.others)
			if !slices.Equal(tc.p.ISR, before.ISR) || tc.p.Leader != before.Leader {
				t.Fatalf("input modified: %+v", tc.p)
			}
			if tc.wantNil {
				if n != nil {
					t.Fatalf("got %+v, want no change", n)
				}
				return
			}
			if n == nil || n.Leader != tc.wantLeader || !slices.Equal(n.ISR, tc.wantISR) {
				t.Fatalf("got %+v, want leader %d ISR %v", n, tc.wantLeader, tc.wantISR)
			}
			if n.PartitionEpoch != tc.p.PartitionEpoch+1 {
				t.Fatalf("partition epoch %d, want %d", n.PartitionEpoch, tc.p.PartitionEpoch+1)
			}
		})
	}
}
