package metadata

import (
	"context"
	"errors"
	"fmt"
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

// The previous controller's silence counts from when the new controller
// last heard from it as raft leader, not from the election: the election
// is part of the time it was silent.
func TestPrevControllerSilenceCountsFromLastContact(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := newTestCluster(t, 3, func(cfg *Config) {
		cfg.SessionTimeout = time.Minute
		cfg.DeadReportGrace = time.Minute // nothing is fenced during the test
	})
	c.registerBrokers(ctx, c.follower(), 1, 2, 3)
	old := c.leader().cfg.NodeID
	c.close(old)
	testutil.Eventually(t, 10*time.Second, func() error {
		l := c.leader()
		l.sessions.mu.Lock()
		since := l.sessions.since
		l.sessions.mu.Unlock()
		if since.IsZero() || !l.sessions.suspected(old) {
			return errors.New("new controller not settled")
		}
		l.sessions.mu.Lock()
		heard := l.sessions.lastHeard(old)
		l.sessions.mu.Unlock()
		if !heard.Before(since) {
			return fmt.Errorf("previous controller last heard at %v, not before the election (%v)", heard, since)
		}
		return nil
	}, "previous controller's silence counted from its last raft contact")
}

func TestSessionsHeardBefore(t *testing.T) {
	t0 := time.Unix(1000, 0)
	img := &Image{Brokers: map[int32]*Broker{1: {ID: 1, Epoch: 5}, 2: {ID: 2, Epoch: 7}}}
	var ss sessions
	ss.reset(t0)
	ss.heardAt(1, t0.Add(-2*time.Second))
	ss.heardAt(2, t0.Add(time.Second)) // not before since: ignored
	ss.suspect(1, 5, t0)
	ss.suspect(2, 7, t0)
	if got := ss.silence(1, t0); got != 2*time.Second {
		t.Errorf("silence of 1 = %v, want 2s", got)
	}
	due := ss.dueSuspects(img, t0.Add(time.Second), 3*time.Second)
	if len(due) != 1 || due[0].ID != 1 {
		t.Errorf("due = %v, want broker 1 (silent 3s)", due)
	}
	ss.beat(2, t0.Add(500*time.Millisecond))
	if got := ss.silence(2, t0.Add(time.Second)); got != 500*time.Millisecond {
		t.Errorf("silence of 2 = %v, want 500ms", got)
	}
	ss.reset(t0.Add(time.Minute))
	if got := ss.silence(1, t0.Add(time.Minute)); got != 0 {
		t.Errorf("after a new reset, silence of 1 = %v, want 0", got)
	}
}
