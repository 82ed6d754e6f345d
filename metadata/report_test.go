package metadata

import (
	"context"
	"errors"
	"fmt"
	"github.com/kbroker/kbroker/internal/testutil"
	"sync/atomic"
	"testing"
	"time"
)

// TestReportBrokerDead: a dead report only speeds up detection. It is
// ignored for an unregistered broker and for one that keeps heartbeating;
// a silent broker is fenced long before its session would expire.
func TestReportBrokerDead(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := testConfig(t.TempDir())
	cfg.SessionTimeout = time.Minute // the session never decides here
	cfg.DeadReportGrace = time.Second
	s := openReady(t, cfg)
	for _, id := range []int32{1, 2, 3} {
		if err := s.RegisterBroker(ctx, BrokerRegistration{ID: id, IncarnationID: fmt.Sprint("inc-", id)}); err != nil {
			t.Fatal(err)
		}
	}

	// Brokers 1 and 2 heartbeat; 3 stays silent.
	var beating [4]atomic.Bool
	beating[1].Store(true)
	beating[2].Store(true)
	// Every heartbeat must land: the checks below assume brokers 1 and 2
	// are heard from while they beat.
	var hbErr atomic.Pointer[error]
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			for id := int32(1); id <= 2; id++ {
				if beating[id].Load() {
					if _, err := s.Heartbeat(ctx, id, s.Image().Brokers[id].Epoch); err != nil {
						err = fmt.Errorf("heartbeat of broker %d: %w", id, err)
						hbErr.CompareAndSwap(nil, &err)
					}
				}
			}
		}
	}()
	defer func() {
		close(stop)
		<-done
		if err := hbErr.Load(); err != nil {
			t.Errorf("%v", *err)
		}
	}()

	// Broker 7 never registered: ignored.
	before := s.Image()
	if err := s.ReportBrokerDead(ctx, 7); err != nil {
		t.Fatalf("report about broker 7: %v", err)
	}
	if after := s.Image(); after != before || s.sessions.suspected(7) {
		t.Fatalf("a report about an unregistered broker changed something (offset %d -> %d)", before.Offset, after.Offset)
	}

	// Broker 1 is alive: reported, suspected, cleared by its heartbeats.
	if err := s.ReportBrokerDead(ctx, 1); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, func() error {
		if s.sessions.suspected(1) {
			return errors.New("still suspected")
		}
		return nil
	}, "suspicion of 1 cleared")
	if s.Image().Brokers[1].Fenced {
		t.Fatal("a heartbeating broker was fenced on a dead report")
	}

	// Broker 3 has been silent for more than the grace: fenced at once.
	testutil.Eventually(t, 5*time.Second, func() error {
		if d := s.sessions.silence(3, time.Now()); d < cfg.DeadReportGrace {
			return fmt.Errorf("silent for %v", d)
		}
		return nil
	}, "3 silent for the grace")
	if err := s.ReportBrokerDead(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if !s.Image().Brokers[3].Fenced {
		t.Fatal("silent broker 3 not fenced by the report")
	}

	// Broker 2 stops just before the report: fenced once silent for the
	// grace, long before its one-minute session.
	beating[2].Store(false)
	if err := s.ReportBrokerDead(ctx, 2); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		if !s.Image().Brokers[2].Fenced {
			return errors.New("not fenced")
		}
		return nil
	}, "2 fenced")
	if s.Image().Brokers[1].Fenced {
		t.Fatal("broker 1 fenced")
	}
}

// TestDueSuspects: which reported brokers the controller fences, forgets
// or keeps watching.
func TestDueSuspects(t *testing.T) {
	t0 := time.Unix(1000, 0)
	const grace = time.Second
	img := emptyImage()
	img.Brokers = map[int32]*Broker{
		1: {ID: 1, Epoch: 10},
		2: {ID: 2, Epoch: 10, Fenced: true},
		3: {ID: 3, Epoch: 11},
		4: {ID: 4, Epoch: 10},
		5: {ID: 5, Epoch: 10},
	}
	for _, tc := range []struct {
		name      string
		id        int32
		lastBeat  time.Duration // after t0; the report is at t0+1s
		now       time.Duration
		wantFence bool
		wantKept  bool
	}{
		{"silent for the grace", 1, 0, 2 * time.Second, true, false},
		{"not yet silent for the grace", 4, 500 * time.Millisecond, 1400 * time.Millisecond, false, true},
		{"heartbeat after the report", 5, 1500 * time.Millisecond, 1600 * time.Millisecond, false, false},
		{"fenced meanwhile", 2, 0, 3 * time.Second, false, false},
		{"re-registered at a new epoch", 3, 0, 3 * time.Second, false, false},
		{"unregistered", 7, 0, 3 * time.Second, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ss sessions
			ss.reset(t0)
			ss.beat(tc.id, t0.Add(tc.lastBeat))
			ss.suspect(tc.id, 10, t0.Add(time.Second))
			due := ss.dueSuspects(img, t0.Add(tc.now), grace)
			if fenced := len(due) == 1 && due[0].ID == tc.id; fenced != tc.wantFence || len(due) > 1 {
				t.Fatalf("due %v, want fenced=%v", due, tc.wantFence)
			}
			if kept := ss.suspected(tc.id); kept != tc.wantKept {
				t.Fatalf("still suspected: %v, want %v", kept, tc.wantKept)
			}
		})
	}
}
