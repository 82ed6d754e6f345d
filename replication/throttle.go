package replication

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kbroker/kbroker/internal/quota"
)

// Replication throttles, as Kafka's ReplicationQuotaManager: one rate per
// broker for the leader side (bytes sent to followers of throttled
// replicas) and one for the follower side (bytes fetched for throttled
// replicas), each bounded by its *.replication.throttled.rate. Over the
// bound, a leader returns no records for a throttled partition to a
// follower outside the ISR, and a follower leaves its throttled
// partitions that are not caught up out of its fetches, until the rate
// falls back. Replicas in the ISR (leader side) or caught up (follower
// side) are never held back, so a throttle cannot shrink the ISR;
// partitions not listed are never slowed. The bytes of every throttled
// partition count towards the rate.
type replicationThrottle struct {
	mu    sync.Mutex
	rate  *quota.Rate
	bound int64 // bytes per second; math.MaxInt64 is none
}

func newReplicationThrottle(cfg quota.Config) *replicationThrottle {
	return &replicationThrottle{rate: quota.NewRate(cfg), bound: math.MaxInt64}
}

func (t *replicationThrottle) setBound(b int64) {
	if b <= 0 {
		b = math.MaxInt64
	}
	t.mu.Lock()
	t.bound = b
	t.mu.Unlock()
}

// exceeded reports whether the measured rate is over the bound (Kafka's
// isQuotaExceeded).
func (t *replicationThrottle) exceeded(now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.bound != math.MaxInt64 && t.rate.Measure(now) > float64(t.bound)
}

func (t *replicationThrottle) record(n int, now time.Time) {
	if n <= 0 {
		return
	}
	t.mu.Lock()
	t.rate.Record(float64(n), now)
	t.mu.Unlock()
}

// throttledReplica reports whether a *.replication.throttled.replicas
// value lists partition on broker: "*" lists all, else
// "partition:broker" entries.
func throttledReplica(list string, partition, broker int32) bool {
	list = strings.TrimSpace(list)
	if list == "" {
		return false
	}
	if list == "*" {
		return true
	}
	for _, e := range strings.Split(list, ",") {
		p, b, ok := strings.Cut(strings.TrimSpace(e), ":")
		if !ok {
			continue
		}
		pn, err1 := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		bn, err2 := strconv.ParseInt(strings.TrimSpace(b), 10, 32)
		if err1 == nil && err2 == nil && int32(pn) == partition && int32(bn) == broker {
			return true
		}
	}
	return false
}

// ThrottleRates reports the replication throttle rates the manager
// enforces (math.MaxInt64: none), for tests and metrics.
func (m *Manager) ThrottleRates() (leader, follower int64) {
	m.leaderThrottle.mu.Lock()
	leader = m.leaderThrottle.bound
	m.leaderThrottle.mu.Unlock()
	m.followerThrottle.mu.Lock()
	follower = m.followerThrottle.bound
	m.followerThrottle.mu.Unlock()
	return leader, follower
}

// inISR reports whether replica is in the partition's ISR.
func (p *Partition) inISR(replica int32) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return slices.Contains(p.mu.isr, replica)
}
