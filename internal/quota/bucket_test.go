package quota

import (
	"testing"
	"time"
)

func TestTokenBucket(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	cfg := Config{Samples: 10, Window: time.Second}
	const bound = 5.0 // burst 50
	type step struct {
		at       time.Duration
		record   float64
		tokens   float64
		throttle time.Duration
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"new bucket is full", []step{{0, 0, 50, 0}}},
		{"recording takes credits", []step{{0, 20, 30, 0}, {0, 30, 0, 0}}},
		// Not negative is not exhausted: zero credits throttle nothing.
		{"exactly empty", []step{{0, 50, 0, 0}}},
		// KIP-599's example: a burst over the credits is accepted and
		// owes its excess, refilled at the bound: 60 over at 5/s is 12 s.
		{"one burst may go negative", []step{{0, 110, -60, 12 * time.Second}}},
		{"refill at the bound", []step{{0, 110, -60, 12 * time.Second}, {2 * time.Second, 0, -50, 10 * time.Second}, {12 * time.Second, 0, 0, 0}}},
		{"refill stops at the burst", []step{{0, 50, 0, 0}, {time.Hour, 0, 50, 0}}},
		{"throttle rounds to the millisecond", []step{{0, 50.0 + 1.0/3, -1.0 / 3, 67 * time.Millisecond}}},
		// A reading before the last one earns nothing and takes nothing.
		{"time going back", []step{{10 * time.Second, 50, 0, 0}, {5 * time.Second, 0, 0, 0}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := NewTokenBucket(cfg)
			if got := b.Burst(bound); got != 50 {
				t.Fatalf("Burst = %v, want 50", got)
			}
			for i, s := range tc.steps {
				now := t0.Add(s.at)
				if s.record != 0 {
					b.Record(s.record, bound, now)
				}
				if got := b.Tokens(bound, now); got < s.tokens-1e-9 || got > s.tokens+1e-9 {
					t.Fatalf("step %d: Tokens = %v, want %v", i, got, s.tokens)
				}
				if got := b.Throttle(bound, now); got != s.throttle {
					t.Fatalf("step %d: Throttle = %v, want %v", i, got, s.throttle)
				}
				if got, want := b.Exhausted(bound, now), s.tokens < 0; got != want {
					t.Fatalf("step %d: Exhausted = %v, want %v", i, got, want)
				}
			}
		})
	}
}

// A lowered bound lowers the burst at once; a raised one refills faster
// but does not add credits by itself.
func TestTokenBucketBoundChange(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	b := NewTokenBucket(Config{Samples: 10, Window: time.Second})
	if got := b.Tokens(10, t0); got != 100 {
		t.Fatalf("Tokens = %v, want a full 100", got)
	}
	if got := b.Tokens(1, t0); got != 10 {
		t.Fatalf("after lowering the bound: Tokens = %v, want the new burst 10", got)
	}
	b.Record(30, 1, t0)
	if got := b.Tokens(10, t0.Add(time.Second)); got != -10 {
		t.Fatalf("after raising the bound: Tokens = %v, want -20 + 10", got)
	}
	if got := b.Throttle(10, t0.Add(time.Second)); got != time.Second {
		t.Fatalf("Throttle = %v, want 1s", got)
	}
}
