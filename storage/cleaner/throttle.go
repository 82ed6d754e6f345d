package cleaner

import (
	"math"
	"sync"
	"time"
)

// Throttle is what a Throttler measures against: the rate and the bytes
// since the period's start. A Manager's one is shared by the logs cleaned
// at once, as Kafka's cleaner threads share one throttler. Its lock is a
// leaf, never held while sleeping.
type Throttle struct {
	mu    sync.Mutex
	rate  float64 // bytes per second; 0 or huge is no limit
	start time.Time
	bytes float64
}

// NewThrottle returns a throttle at rate from now.
func NewThrottle(rate float64, now time.Time) *Throttle {
	return &Throttle{rate: rate, start: now}
}

// throttlePeriod bounds the credit a throttle below its rate carries: an
// idle cleaner does not earn a burst.
const throttlePeriod = 300 * time.Millisecond

// unlimitedRate reports whether a log.cleaner.io.max.bytes.per.second of
// r is no limit.
func unlimitedRate(r float64) bool { return r <= 0 || r >= math.MaxFloat64/2 }

// SetRate changes the rate and starts a new period.
func (s *Throttle) SetRate(rate float64, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rate, s.start, s.bytes = rate, now, 0
}

// Rate is the rate in bytes per second.
func (s *Throttle) Rate() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rate
}

// Throttler holds a cleaning to log.cleaner.io.max.bytes.per.second over
// the bytes it reads and writes, as Kafka's Throttler: when ahead of the
// rate it sleeps until the rate is met. A nil *Throttler does not
// throttle.
type Throttler struct {
	state *Throttle
	stop  <-chan struct{}
	now   func() time.Time
	sleep func(d time.Duration, stop <-chan struct{})
}

// NewThrottler returns a throttler on shared, or when shared is nil on a
// throttle of its own at rate; nil (no throttling) for neither. Closing
// stop ends its sleeps; sleep, when not nil, replaces them (tests).
func NewThrottler(shared *Throttle, rate float64, stop <-chan struct{}, sleep func(d time.Duration, stop <-chan struct{})) *Throttler {
	st := shared
	if st == nil {
		if unlimitedRate(rate) {
			return nil
		}
		st = &Throttle{rate: rate, start: time.Now()}
	}
	th := &Throttler{state: st, stop: stop, now: time.Now, sleep: sleep}
	if th.sleep == nil {
		th.sleep = sleepOrStop
	}
	return th
}

// Add accounts n bytes and sleeps while the cleanings sharing the
// throttle are ahead of the rate by more than 10 ms of transfer. It
// blocks for the sleep; the caller holds no log lock.
func (t *Throttler) Add(n int) {
	if t == nil {
		return
	}
	s := t.state
	s.mu.Lock()
	if unlimitedRate(s.rate) {
		s.mu.Unlock()
		return
	}
	now := t.now()
	s.bytes += float64(n)
	elapsed := now.Sub(s.start)
	ahead := time.Duration(s.bytes/s.rate*float64(time.Second)) - elapsed
	switch {
	case ahead > 10*time.Millisecond:
		// This sleep pays for the bytes so far: whoever adds next is
		// measured from its end.
		s.start, s.bytes = now.Add(ahead), 0
	case elapsed > throttlePeriod:
		s.start, s.bytes = now, 0
		ahead = 0
	default:
		ahead = 0
	}
	s.mu.Unlock()
	if ahead > 0 {
		t.sleep(ahead, t.stop)
	}
}

func sleepOrStop(d time.Duration, stop <-chan struct{}) {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-stop:
	}
}
