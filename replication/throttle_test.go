package replication

import (
	"math"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/quota"
)

func TestThrottledReplica(t *testing.T) {
	tests := []struct {
		list              string
		partition, broker int32
		want              bool
	}{
		{"", 0, 1, false},
		{"*", 7, 3, true},
		{"0:1,1:2", 0, 1, true},
		{"0:1,1:2", 1, 2, true},
		{"0:1,1:2", 1, 1, false},
		{" 0 : 1 , 2:3 ", 2, 3, true},
		{"10:1", 1, 1, false},
		{"junk,0:x,3:4", 3, 4, true},
	}
	for _, tc := range tests {
		if got := throttledReplica(tc.list, tc.partition, tc.broker); got != tc.want {
			t.Errorf("throttledReplica(%q, %d, %d) = %v, want %v", tc.list, tc.partition, tc.broker, got, tc.want)
		}
	}
}

func TestReplicationThrottleExceeded(t *testing.T) {
	th := newReplicationThrottle(quota.Config{Samples: 2, Window: time.Second})
	now := time.Unix(1_000_000, 0)
	th.record(10_000, now)
	if th.exceeded(now) {
		t.Fatal("exceeded without a bound")
	}
	th.setBound(5_000)
	if !th.exceeded(now) {
		t.Fatal("10000 B in a 1 s window not over 5000 B/s")
	}
	if th.exceeded(now.Add(3 * time.Second)) {
		t.Fatal("still exceeded after the window passed")
	}
	th.setBound(0) // none
	if th.bound != math.MaxInt64 || th.exceeded(now) {
		t.Fatal("a zero bound throttles")
	}
}
