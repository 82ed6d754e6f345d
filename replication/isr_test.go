package replication

import (
	"math"
	"testing"
	"testing/quick"
)

func TestEffectiveMinISR(t *testing.T) {
	cases := []struct {
		minISR   int32
		replicas int
		want     int
	}{
		{1, 1, 1}, {2, 3, 2}, {3, 3, 3}, {2, 1, 1}, {5, 3, 3}, {0, 3, 1}, {-1, 3, 1},
	}
	for _, c := range cases {
		if got := EffectiveMinISR(c.minISR, c.replicas); got != c.want {
			t.Errorf("EffectiveMinISR(%d, %d) = %d, want %d", c.minISR, c.replicas, got, c.want)
		}
	}
}

func TestValidRequiredAcks(t *testing.T) {
	for acks := int16(-3); acks <= 3; acks++ {
		want := acks == -1 || acks == 0 || acks == 1
		if ValidRequiredAcks(acks) != want {
			t.Errorf("ValidRequiredAcks(%d) = %v", acks, !want)
		}
	}
}

func TestHighWatermark(t *testing.T) {
	const leader = 1
	cases := []struct {
		name     string
		leo      int64
		isr      []int32
		follower map[int32]int64
		minISR   int
		want     int64
	}{
		{"sole leader", 10, []int32{1}, nil, 1, 10},
		{"min over ISR", 10, []int32{1, 2, 3}, map[int32]int64{2: 7, 3: 9}, 2, 7},
		{"follower ahead of leader is capped", 10, []int32{1, 2}, map[int32]int64{2: 12}, 2, 10},
		{"out-of-ISR follower ignored", 10, []int32{1, 2}, map[int32]int64{2: 8, 3: 1}, 2, 8},
		{"unknown follower position holds it", 10, []int32{1, 2}, nil, 1, math.MinInt64},
		{"ISR below min ISR holds it", 10, []int32{1}, nil, 2, math.MinInt64},
	}
	for _, c := range cases {
		if got := HighWatermark(c.leo, leader, c.isr, c.follower, c.minISR); got != c.want {
			t.Errorf("%s: HighWatermark = %d, want %d", c.name, got, c.want)
		}
	}
}

// The high watermark never exceeds any ISR member's log end offset.
func TestHighWatermarkBoundedByISR(t *testing.T) {
	f := func(leo uint32, f2, f3 uint32) bool {
		followers := map[int32]int64{2: int64(f2), 3: int64(f3)}
		hw := HighWatermark(int64(leo), 1, []int32{1, 2, 3}, followers, 2)
		return hw <= int64(leo) && hw <= int64(f2) && hw <= int64(f3)
	}
	if err := quick.Check(f, nil); err != nil {
		t.Fatal(err)
	}
}
