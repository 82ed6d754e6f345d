package bench

import (
	"testing"
	"time"
)

// The leader watch keeps, per partition, the longest continuous time
// without a usable leader: none, or the restarted broker once its
// process has exited.
func TestLeaderWatch(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	type poll struct {
		ms         int
		leaders    map[int32]int32
		downExited bool
	}
	for _, tc := range []struct {
		name  string
		polls []poll
		endMs int
		want  time.Duration
		wantP int32
	}{
		{"always led", []poll{{0, map[int32]int32{0: 1, 1: 2}, false}, {10, map[int32]int32{0: 2, 1: 2}, true}}, 20, 0, 0},
		{"no leader for 30 ms", []poll{
			{0, map[int32]int32{0: 1, 1: 2}, false},
			{10, map[int32]int32{0: 1, 1: -1}, false},
			{40, map[int32]int32{0: 1, 1: 3}, false},
		}, 50, 30 * time.Millisecond, 1},
		{"the stopped broker still named", []poll{
			{0, map[int32]int32{0: 1}, false},
			{10, map[int32]int32{0: 1}, true},
			{70, map[int32]int32{0: 2}, true},
		}, 80, 60 * time.Millisecond, 0},
		{"still leaderless at the end", []poll{{0, map[int32]int32{0: -1}, false}}, 100, 100 * time.Millisecond, 0},
		{"partition missing from the answer", []poll{{0, map[int32]int32{}, false}, {25, map[int32]int32{0: 2}, false}}, 30, 25 * time.Millisecond, 0},
	} {
		w := newLeaderWatch(2)
		for _, p := range tc.polls {
			for i := range int32(2) {
				if _, ok := p.leaders[i]; !ok && i == 1 {
					p.leaders[i] = 3 // only partition 0 is under test unless named
				}
			}
			w.observe(at(p.ms), p.leaders, 1, p.downExited)
		}
		got, gotP, polls, _ := w.result(at(tc.endMs))
		if got != tc.want || (got > 0 && gotP != tc.wantP) || polls != len(tc.polls) {
			t.Errorf("%s: longest %v on partition %d after %d polls, want %v on %d after %d", tc.name, got, gotP, polls, tc.want, tc.wantP, len(tc.polls))
		}
	}
}
