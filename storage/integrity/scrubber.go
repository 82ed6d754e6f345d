package integrity

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"time"
)

// DefaultBytesPerSecond is the scrubber's default rate
// (log.scrubber.bytes.per.second): 1 MiB/s verifies 86 GB a day while
// costing about 1% of a disk's sequential bandwidth and of one core
// (CRC-32C runs at several GB/s); higher rates also push more cold
// segments through the page cache, evicting what tailing consumers read.
const DefaultBytesPerSecond = 1 << 20

// DefaultPassInterval is the least time between the starts of two passes
// over every closed segment: with little data a pass ends quickly, and
// verifying the same bytes again at once finds nothing new.
const DefaultPassInterval = time.Hour

// Segment is a closed segment to verify.
type Segment struct {
	Path string // the .log file
	Base int64  // its base offset
	Size int64  // the bytes to verify
	File io.ReaderAt
	// Recheck reads the batch holding offset again under the log's lock,
	// as a fetch does, and reports whether it is still corrupt (the read
	// then reports it to the Reports). The scrubber reads without the
	// lock, so a segment deleted, truncated or swapped by the cleaner
	// under it can look corrupt; only a recheck says it is.
	Recheck func(offset int64) bool
}

// Scrubber verifies the batches of closed segments in the background at
// a bounded rate (SetRate), one segment at a time, holding no lock of the
// logs while it reads. Run is its goroutine; its owner (the storage
// Manager's Run) starts it and stops it with the context.
type Scrubber struct {
	segments func() []Segment
	logger   *slog.Logger
	rate     atomic.Int64 // bytes per second; 0: off
	every    atomic.Int64 // DefaultPassInterval, in nanoseconds
	changed  chan struct{}

	bytes, passes, confirmed atomic.Int64
}

// NewScrubber returns a Scrubber of the segments segments lists (called
// once per pass) at DefaultBytesPerSecond.
func NewScrubber(segments func() []Segment, logger *slog.Logger) *Scrubber {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Scrubber{segments: segments, logger: logger, changed: make(chan struct{}, 1)}
	s.rate.Store(DefaultBytesPerSecond)
	s.every.Store(int64(DefaultPassInterval))
	return s
}

// SetRate sets the bytes verified per second; 0 (or less) stops the
// scrubbing until a rate is set again. It takes effect at once, also in
// the middle of a segment.
func (s *Scrubber) SetRate(bytesPerSecond int64) {
	s.rate.Store(max(bytesPerSecond, 0))
	s.poke()
}

// SetPassInterval sets the least time between the starts of two passes.
func (s *Scrubber) SetPassInterval(d time.Duration) {
	s.every.Store(int64(max(d, 0)))
	s.poke()
}

func (s *Scrubber) poke() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// Stats reports the bytes verified, the passes completed and the corrupt
// batches the scrubber found (and a recheck confirmed) since it was made.
func (s *Scrubber) Stats() (bytes, passes, found int64) {
	return s.bytes.Load(), s.passes.Load(), s.confirmed.Load()
}

// Run scrubs until ctx is done.
func (s *Scrubber) Run(ctx context.Context) {
	var last time.Time // when the last pass started (monotonic)
	for ctx.Err() == nil {
		wait := time.Duration(-1) // until the rate changes
		if s.rate.Load() > 0 {
			wait = 0
			if !last.IsZero() {
				wait = max(time.Until(last.Add(time.Duration(s.every.Load()))), 0)
			}
		}
		if wait != 0 {
			s.sleep(ctx, wait)
			continue
		}
		last = time.Now()
		if s.pass(ctx) {
			s.passes.Add(1)
		}
	}
}

// sleep waits d (forever when negative), until ctx is done or the rate
// or interval changes.
func (s *Scrubber) sleep(ctx context.Context, d time.Duration) {
	var timeout <-chan time.Time
	if d >= 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-ctx.Done():
	case <-s.changed:
	case <-timeout:
	}
}

// pass verifies every segment listed once; false if it was cut short
// (ctx, or the rate set to 0).
func (s *Scrubber) pass(ctx context.Context) bool {
	for _, seg := range s.segments() {
		if !s.verify(ctx, seg) {
			return false
		}
	}
	return true
}

// pacer keeps one segment's reads at the rate: a segment starts with no
// credit, so time spent idle is never spent in a burst.
type pacer struct {
	start time.Time
	done  int64
	rate  int64
}

// pace accounts n bytes read and sleeps until the rate allows them; false
// when the scrub must stop.
func (s *Scrubber) pace(ctx context.Context, p *pacer, n int) bool {
	rate := s.rate.Load()
	if rate <= 0 || ctx.Err() != nil {
		return false
	}
	if rate != p.rate {
		*p = pacer{start: time.Now(), rate: rate}
	}
	p.done += int64(n)
	due := p.start.Add(time.Duration(float64(p.done) / float64(rate) * float64(time.Second)))
	if d := time.Until(due); d >= time.Millisecond {
		s.sleep(ctx, d)
	}
	return ctx.Err() == nil
}

// verify checks seg's batches: each CRC, and offsets that only grow. It
// returns false when the scrub must stop.
func (s *Scrubber) verify(ctx context.Context, seg Segment) bool {
	sc := NewScanner(seg.File, 0, seg.Size)
	p := pacer{}
	next := seg.Base
	for {
		b, pos, ok := sc.Next()
		if !ok {
			break
		}
		err := Check(b, pos, next)
		if err == nil && b.BaseOffset() < next {
			err = &CorruptBatchError{Position: pos, Offset: next, Reason: "offsets go backwards"}
		}
		if err != nil {
			s.found(seg, err)
			return true // the rest of the segment goes with the repair
		}
		next = b.LastOffset() + 1
		s.bytes.Add(int64(len(b)))
		if !s.pace(ctx, &p, len(b)) {
			return false
		}
	}
	switch err := sc.Err(); {
	case err == nil:
	case errors.Is(err, ErrStorage):
		// Deleted or closed under the scrub (retention, truncation); a
		// disk error took its directory offline on the way.
		s.logger.Debug("scrub: segment not read to its end", "segment", seg.Path, "err", err)
	default:
		s.found(seg, &CorruptBatchError{Position: sc.pos, Offset: next, Reason: err.Error()})
	}
	return true
}

// found rechecks a batch that failed under the log's lock.
func (s *Scrubber) found(seg Segment, err error) {
	var e *CorruptBatchError
	if !errors.As(err, &e) {
		return
	}
	if seg.Recheck != nil && seg.Recheck(e.Offset) {
		s.confirmed.Add(1)
		s.logger.Error("scrub: corrupt batch", "segment", seg.Path, "position", e.Position, "offset", e.Offset, "reason", e.Reason)
		return
	}
	s.logger.Debug("scrub: mismatch not confirmed under the log's lock (the segment changed under the scrub)",
		"segment", seg.Path, "position", e.Position, "offset", e.Offset, "reason", e.Reason)
}
