package replication

import (
	"math"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/testutil"
)

// TestDurableHighWatermark: with flush.messages=1 the high watermark
// covers only what every ISR member has fsynced (recovery point), so an
// acks=all produce completes only once its batch is on every ISR disk;
// by default the high watermark moves with the log end offsets and
// nothing is fsynced.
func TestDurableHighWatermark(t *testing.T) {
	for _, tc := range []struct {
		name          string
		flushMessages int64
		durable       bool
	}{
		{"default", math.MaxInt64, false},
		{"flush.messages=1", 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestCluster(t, 1, 2)
			c.flushMessages = tc.flushMessages
			c.images.elect(t, "orders", 0, []int32{1, 2}, 1, 1, 2)
			n1, n2 := c.start(1), c.start(2)
			c.waitApplied(t, n1)
			c.waitApplied(t, n2)
			leader, follower := n1.partition(t, tp0), n2.partition(t, tp0)
			if got := Durable(leader.State().Config); got != tc.durable {
				t.Fatalf("Durable = %v, want %v", got, tc.durable)
			}
			n1.produce(t, tp0, -1, 20, "d")
			testutil.Eventually(t, 10*time.Second, func() bool { return leader.HighWatermark() == 20 }, "the high watermark to reach 20")
			for name, p := range map[string]*Partition{"leader": leader, "follower": follower} {
				rp := p.Log().RecoveryPoint()
				if tc.durable && rp < leader.HighWatermark() {
					t.Errorf("%s: recovery point %d below the high watermark %d", name, rp, leader.HighWatermark())
				}
				if !tc.durable && rp != 0 {
					t.Errorf("%s: recovery point %d, want 0 (nothing fsynced by default)", name, rp)
				}
			}
		})
	}
}
