package cluster

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kbroker/kbroker/metadata"
)

// slowISR records how many changes run at once.
type slowISR struct {
	running, peak atomic.Int32
	release       chan struct{}
}

func (s *slowISR) ChangePartition(ctx context.Context, _ metadata.PartitionChange) error {
	n := s.running.Add(1)
	defer s.running.Add(-1)
	for {
		p := s.peak.Load()
		if n <= p || s.peak.CompareAndSwap(p, n) {
			break
		}
	}
	select {
	case <-s.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Many partitions proposing ISR changes at once have at most the limit in
// flight to the controller; the others wait, and one whose deadline
// passes while waiting fails with it (replication proposes it again).
func TestISRLimiterBoundsChangesInFlight(t *testing.T) {
	const limit, proposals = 4, 100
	next := &slowISR{release: make(chan struct{})}
	l := newISRLimiter(next, limit)

	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, proposals)
	for range proposals {
		wg.Go(func() { errs <- l.ChangePartition(context.Background(), metadata.PartitionChange{}) })
	}
	// Wait until the limit is in flight, then a proposal that cannot get
	// a slot before its deadline.
	deadline := time.Now().Add(10 * time.Second)
	for next.running.Load() < limit && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if err := l.ChangePartition(short, metadata.PartitionChange{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a proposal waiting past its deadline: %v, want DeadlineExceeded", err)
	}
	close(next.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if p := next.peak.Load(); p != limit {
		t.Fatalf("%d changes in flight at the peak, want %d", p, limit)
	}
}

// Before metadata.version 3 a batch goes out as single changes, at most
// the limit at once, each with its own result.
func TestISRLimiterEachBoundsAndAnswersPerChange(t *testing.T) {
	const limit, changes = 4, 50
	next := &slowISR{release: make(chan struct{})}
	close(next.release)
	l := newISRLimiter(next, limit)
	errs := l.each(context.Background(), make([]metadata.PartitionChange, changes))
	if len(errs) != changes {
		t.Fatalf("%d results for %d changes", len(errs), changes)
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("change %d: %v", i, err)
		}
	}
	if p := next.peak.Load(); p > limit {
		t.Fatalf("%d changes in flight at the peak, limit %d", p, limit)
	}
	// A deadline that passes fails the changes still waiting, each alone.
	blocked := &slowISR{release: make(chan struct{})}
	l = newISRLimiter(blocked, limit)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	for i, err := range l.each(ctx, make([]metadata.PartitionChange, changes)) {
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("change %d: %v, want DeadlineExceeded", i, err)
		}
	}
}
