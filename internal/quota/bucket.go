package quota

import (
	"math"
	"time"
)

// TokenBucket is Kafka's TokenBucket stat (KIP-599), which measures the
// controller mutation quota: credits refill at the bound per second up
// to a burst of bound × Samples × Window, and recording takes credits
// away, possibly below zero. The quota is exhausted while the credits
// are negative; the throttle time is how long the refill takes to bring
// them back to zero. Unlike a sampled Rate it forgives a burst as soon
// as the refill has covered it, rather than once the burst's sample has
// left the window.
//
// The bound is passed to each call, as Kafka reads it from the sensor's
// current quota, so a changed quota takes effect at once. A new bucket
// is full. Not safe for concurrent use.
type TokenBucket struct {
	cfg     Config
	tokens  float64
	last    time.Time
	started bool
}

// NewTokenBucket returns a full bucket over cfg (invalid fields take
// DefaultConfig's).
func NewTokenBucket(cfg Config) *TokenBucket {
	if cfg.Samples < 1 {
		cfg.Samples = DefaultConfig.Samples
	}
	if cfg.Window <= 0 {
		cfg.Window = DefaultConfig.Window
	}
	return &TokenBucket{cfg: cfg}
}

// Burst is the most credits the bucket holds under bound.
func (b *TokenBucket) Burst(bound float64) float64 {
	return bound * float64(b.cfg.Samples) * b.cfg.Window.Seconds()
}

// refill adds the credits earned since the last call, up to the burst.
// Kafka's bucket starts empty at the epoch, so its first refill fills
// it; a time before the last one (not expected with monotonic readings)
// earns nothing rather than taking credits away.
func (b *TokenBucket) refill(bound float64, now time.Time) {
	burst := b.Burst(bound)
	if !b.started {
		b.tokens, b.last, b.started = burst, now, true
		return
	}
	if d := now.Sub(b.last); d > 0 {
		b.tokens += bound * d.Seconds()
		b.last = now
	}
	b.tokens = min(burst, b.tokens)
}

// Tokens is the credits left at now.
func (b *TokenBucket) Tokens(bound float64, now time.Time) float64 {
	b.refill(bound, now)
	return b.tokens
}

// Record takes v credits at now.
func (b *TokenBucket) Record(v, bound float64, now time.Time) {
	b.refill(bound, now)
	b.tokens = min(b.Burst(bound), b.tokens-v)
}

// Exhausted reports whether the credits are below zero at now: the quota
// is exceeded.
func (b *TokenBucket) Exhausted(bound float64, now time.Time) bool {
	return b.Tokens(bound, now) < 0
}

// Throttle is the time the refill takes to bring the credits back to
// zero (Kafka's ControllerMutationQuotaManager.throttleTimeMs: -tokens /
// bound seconds, rounded to the millisecond); 0 while they are not
// negative.
func (b *TokenBucket) Throttle(bound float64, now time.Time) time.Duration {
	if bound <= 0 {
		return 0
	}
	t := b.Tokens(bound, now)
	if t >= 0 {
		return 0
	}
	return time.Duration(math.Round(-t/bound*1000)) * time.Millisecond
}
