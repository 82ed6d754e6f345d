package quota

import (
	"math"
	"time"
)

// Config is a quota window: Samples samples of Window each (Kafka's
// quota.window.num and quota.window.size.seconds).
type Config struct {
	Samples int
	Window  time.Duration
}

// DefaultConfig is Kafka's: 11 samples of 1 s.
var DefaultConfig = Config{Samples: 11, Window: time.Second}

type sample struct {
	start, lastEvent time.Time
	value            float64
	events           int64
}

func (s *sample) reset(now time.Time) { *s = sample{start: now, lastEvent: now} }

// Rate is Kafka's Rate over a SampledStat: the sum of the values recorded
// in the retained samples divided by the time they span, taken as at
// least Samples-1 full windows (so a new sensor does not report a huge
// rate from its first value). Not safe for concurrent use.
type Rate struct {
	cfg     Config
	samples []sample // up to Samples+1: one overlapping the window's start
	current int
}

// NewRate returns an empty rate over cfg (invalid fields take
// DefaultConfig's).
func NewRate(cfg Config) *Rate {
	if cfg.Samples < 1 {
		cfg.Samples = DefaultConfig.Samples
	}
	if cfg.Window <= 0 {
		cfg.Window = DefaultConfig.Window
	}
	return &Rate{cfg: cfg}
}

func (r *Rate) cur(now time.Time) *sample {
	if len(r.samples) == 0 {
		r.samples = append(r.samples, sample{start: now, lastEvent: now})
	}
	return &r.samples[r.current]
}

// Record adds v at now.
func (r *Rate) Record(v float64, now time.Time) {
	s := r.cur(now)
	if now.Sub(s.start) >= r.cfg.Window {
		r.current = (r.current + 1) % (r.cfg.Samples + 1)
		if r.current >= len(r.samples) {
			r.samples = append(r.samples, sample{})
		}
		s = &r.samples[r.current]
		s.reset(now)
	}
	s.value += v
	s.events++
	s.lastEvent = now
}

// purge resets the samples without an event within the monitored window.
func (r *Rate) purge(now time.Time) {
	expire := time.Duration(r.cfg.Samples) * r.cfg.Window
	for i := range r.samples {
		if now.Sub(r.samples[i].lastEvent) >= expire {
			r.samples[i].reset(now)
		}
	}
}

// WindowSize is the time the rate is measured over at now.
func (r *Rate) WindowSize(now time.Time) time.Duration {
	r.purge(now)
	oldest := r.cur(now).start
	for _, s := range r.samples {
		if s.start.Before(oldest) {
			oldest = s.start
		}
	}
	elapsed := now.Sub(oldest)
	if full, min := int(elapsed/r.cfg.Window), r.cfg.Samples-1; full < min {
		elapsed += time.Duration(min-full) * r.cfg.Window
	}
	return max(elapsed, time.Millisecond)
}

// Measure is the rate per second at now.
func (r *Rate) Measure(now time.Time) float64 {
	w := r.WindowSize(now) // purges
	total := 0.0
	for _, s := range r.samples {
		total += s.value
	}
	return total / w.Seconds()
}

// Idle reports whether nothing was recorded in the monitored window, so
// the rate measures zero and may be forgotten.
func (r *Rate) Idle(now time.Time) bool {
	expire := time.Duration(r.cfg.Samples) * r.cfg.Window
	for _, s := range r.samples {
		if now.Sub(s.lastEvent) < expire && s.events > 0 {
			return false
		}
	}
	return true
}

// Throttle is the time to hold back a client whose rate is over bound
// (Kafka's QuotaUtils.throttleTime): (rate - bound) / bound of the
// measured window, so that after it the rate is back at the bound; 0
// when the rate is within it. limit caps it (0: no cap).
func (r *Rate) Throttle(bound float64, limit time.Duration, now time.Time) time.Duration {
	if bound <= 0 {
		return 0
	}
	w := r.WindowSize(now)
	rate := r.Measure(now)
	if rate <= bound {
		return 0
	}
	t := time.Duration(math.Round((rate-bound)/bound*float64(w.Milliseconds()))) * time.Millisecond
	if limit > 0 && t > limit {
		t = limit
	}
	return t
}
