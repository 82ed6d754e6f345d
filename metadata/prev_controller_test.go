package metadata

import (
	"context"
	"errors"
	"github.com/kbroker/kbroker/internal/testutil"
	"testing"
	"time"
)

// When the active controller's node goes silent (paused, isolated), the
// next controller suspects its broker at once: it is fenced after
// DeadReportGrace, not after a whole new session timeout counted from the
// election, while the other brokers, heartbeating, stay unfenced.
func TestNewControllerFencesSilentPrevious(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := newTestCluster(t, 3, func(cfg *Config) {
		cfg.SessionTimeout = time.Minute // far beyond the test: only the suspicion can fence
		cfg.DeadReportGrace = 300 * time.Millisecond
	})
	f := c.follower()
	c.registerBrokers(ctx, f, 1, 2, 3)
	old := c.leader().cfg.NodeID
	var live []int32
	for id := int32(1); id <= 3; id++ {
		if id != old {
			live = append(live, id)
		}
	}
	startHeartbeats(c, f, live...)
	c.close(old)

	testutil.Eventually(t, 10*time.Second, func() error {
		img := c.leader().Image()
		if !img.Brokers[old].Fenced {
			return errors.New("not fenced")
		}
		return nil
	}, "the previous controller's broker fenced")
	img := c.leader().Image()
	for _, id := range live {
		if img.Brokers[id].Fenced {
			t.Errorf("heartbeating broker %d fenced", id)
		}
	}
}
