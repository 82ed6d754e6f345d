package quota

import (
	"testing"
	"time"
)

func TestRateMeasure(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	cfg := Config{Samples: 11, Window: time.Second}
	tests := []struct {
		name   string
		record func(r *Rate)
		at     time.Duration
		want   float64
	}{
		{"empty", func(*Rate) {}, 0, 0},
		// A first value is spread over Samples-1 windows, as Kafka does.
		{"first value over ten windows", func(r *Rate) { r.Record(1000, t0) }, 0, 100},
		{"steady 100 per second", func(r *Rate) {
			for i := range 30 {
				r.Record(100, t0.Add(time.Duration(i)*time.Second))
			}
		}, 29 * time.Second, 100 * 11 / 10.0},
		// At 20 s the first sample is past the 11 s window: what is left
		// is 1000 over the 10 s since the second one.
		{"expired sample dropped", func(r *Rate) {
			r.Record(1000, t0)
			r.Record(1000, t0.Add(10*time.Second))
		}, 20 * time.Second, 100},
		{"old samples expire", func(r *Rate) { r.Record(1000, t0) }, 12 * time.Second, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRate(cfg)
			tc.record(r)
			if got := r.Measure(t0.Add(tc.at)); got < tc.want*0.99 || got > tc.want*1.01 {
				t.Fatalf("Measure = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRateThrottle(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	r := NewRate(Config{Samples: 11, Window: time.Second})
	r.Record(2000, t0)
	// 2000 over a 10 s window is 200/s; a bound of 100/s asks for
	// (200-100)/100 * 10 s = 10 s.
	if got := r.Throttle(100, 0, t0); got != 10*time.Second {
		t.Fatalf("Throttle = %v, want 10s", got)
	}
	if got := r.Throttle(100, time.Second, t0); got != time.Second {
		t.Fatalf("capped Throttle = %v, want 1s", got)
	}
	if got := r.Throttle(300, 0, t0); got != 0 {
		t.Fatalf("Throttle within bound = %v, want 0", got)
	}
	if r.Idle(t0.Add(5 * time.Second)) {
		t.Fatal("Idle within the window")
	}
	if !r.Idle(t0.Add(11 * time.Second)) {
		t.Fatal("not Idle after the window")
	}
}
