package metadata

import (
	"slices"
	"testing"

	"github.com/kbroker/kbroker/metadata/decisions"
)

func TestDecideElection(t *testing.T) {
	for _, tc := range []struct {
		name     string
		typ      ElectionType
		replicas []int32
		isr      []int32
		leader   int32
		alive    []int32
		want     ElectionOutcome
		leaderTo int32
		isrTo    []int32
	}{
		{"preferred moves back", ElectPreferred, []int32{1, 2}, []int32{1, 2}, 2, []int32{1, 2}, Elected, 1, []int32{1, 2}},
		{"preferred already leads", ElectPreferred, []int32{1, 2}, []int32{1, 2}, 1, []int32{1, 2}, ElectionNotNeeded, 0, nil},
		{"preferred out of ISR", ElectPreferred, []int32{1, 2}, []int32{2}, 2, []int32{1, 2}, PreferredLeaderNotAvailable, 0, nil},
		{"preferred fenced", ElectPreferred, []int32{1, 2}, []int32{1, 2}, 2, []int32{2}, PreferredLeaderNotAvailable, 0, nil},
		{"preferred for offline partition", ElectPreferred, []int32{1, 2}, []int32{1}, NoLeader, []int32{1, 2}, Elected, 1, []int32{1}},
		{"unclean with a leader", ElectUnclean, []int32{1, 2}, []int32{1}, 1, []int32{1, 2}, ElectionNotNeeded, 0, nil},
		{"unclean picks an alive ISR member first", ElectUnclean, []int32{1, 2, 3}, []int32{3}, NoLeader, []int32{2, 3}, Elected, 3, []int32{3}},
		{"unclean out of ISR resets the ISR", ElectUnclean, []int32{1, 2, 3}, []int32{1}, NoLeader, []int32{2, 3}, Elected, 2, []int32{2}},
		{"unclean, nobody alive", ElectUnclean, []int32{1, 2}, []int32{1}, NoLeader, nil, EligibleLeadersNotAvailable, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Partition{Replicas: tc.replicas, ISR: tc.isr, Leader: tc.leader}
			before := slices.Clone(p.ISR)
			leader, isr, got := decisions.Elect(p, tc.typ, aliveSet(tc.alive...))
			if got != tc.want {
				t.Fatalf("outcome %d, want %d", got, tc.want)
			}
			if !slices.Equal(p.ISR, before) {
				t.Fatalf("input ISR modified: %v", p.ISR)
			}
			if got != Elected {
				return
			}
			if leader != tc.leaderTo || !slices.Equal(isr, tc.isrTo) {
				t.Fatalf("leader %d ISR %v, want %d %v", leader, isr, tc.leaderTo, tc.isrTo)
			}
		})
	}
}
