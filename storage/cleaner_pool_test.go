package storage

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/testutil"
	"github.com/kbroker/kbroker/wire/record"
)

// log.cleaner.backoff.ms changed while Run runs re-arms its ticker: a
// cleaner started with an hour's backoff cleans soon after it is lowered.
func TestCleanerBackoffChangeReachesRun(t *testing.T) {
	m, l := openTestManager(t, OSFS{}, t.TempDir(), compactConfig())
	fillKeyed(t, l, record.CodecNone, 100, 10, testNow)
	m.SetCleanerBackoff(time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	defer func() {
		cancel()
		<-done
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	}()
	m.SetCleanerBackoff(10 * time.Millisecond)
	err := testutil.Poll(context.Background(), 30*time.Second, func() error {
		if r, _ := l.DirtyRatio(time.Now()); r != 0 {
			return fmt.Errorf("dirty ratio %v", r)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Run did not clean after the backoff was lowered: %v", err)
	}
}

// log.cleaner.io.max.bytes.per.second changed on a Manager applies to
// its next cleanings: throttled at a low rate, not at all once lifted.
func TestCleanerIORateChange(t *testing.T) {
	m, l := openTestManager(t, OSFS{}, t.TempDir(), compactConfig())
	defer m.Close()
	var slept time.Duration
	m.cleanerSleep = func(d time.Duration, _ <-chan struct{}) { slept += d }
	now := time.UnixMilli(testNow + 1000)
	for i, tc := range []struct {
		rate      float64
		throttled bool
	}{
		{math.MaxFloat64, false},
		{1000, true},
		{math.MaxFloat64, false},
	} {
		slept = 0
		m.SetCleaner(true, CleanerLimits{IOMaxBytesPerSecond: tc.rate})
		fillKeyed(t, l, record.CodecNone, 100, 10, testNow)
		if n := m.CleanLogs(context.Background(), now); n != 1 {
			t.Fatalf("step %d: cleaned %d logs", i, n)
		}
		if (slept > 0) != tc.throttled {
			t.Fatalf("step %d: rate %v slept %v", i, tc.rate, slept)
		}
	}
}

// log.cleaner.threads sizes CleanLogs' worker pool: with 2, two logs are
// cleaned at once (both are seen inside the throttle together) and share
// the dedupe buffer; with 1, never two at once.
func TestCleanerThreads(t *testing.T) {
	for _, threads := range []int{1, 2} {
		t.Run(fmt.Sprint(threads), func(t *testing.T) {
			m, a := openTestManager(t, OSFS{}, t.TempDir(), compactConfig())
			defer m.Close()
			b, err := m.GetOrCreate("t", 1, compactConfig())
			if err != nil {
				t.Fatal(err)
			}
			fillKeyed(t, a, record.CodecNone, 100, 10, testNow)
			fillKeyed(t, b, record.CodecNone, 100, 10, testNow)
			var mu sync.Mutex
			inside, most := 0, 0
			both := make(chan struct{})
			m.cleanerSleep = func(_ time.Duration, stop <-chan struct{}) {
				mu.Lock()
				inside++
				most = max(most, inside)
				if inside == 2 && most == 2 && threads == 2 {
					select {
					case <-both:
					default:
						close(both)
					}
				}
				mu.Unlock()
				if threads == 2 {
					// Hold the first cleaning here until the other joins.
					select {
					case <-both:
					case <-stop:
					case <-time.After(time.Minute):
					}
				}
				mu.Lock()
				inside--
				mu.Unlock()
			}
			// 1 B/s: every read sleeps, which is where concurrency shows.
			m.SetCleaner(true, CleanerLimits{IOMaxBytesPerSecond: 1, DedupeBufferSize: 1 << 20})
			m.SetCleanerThreads(threads)
			if n := m.CleanLogs(context.Background(), time.UnixMilli(testNow+1000)); n != 2 {
				t.Fatalf("cleaned %d logs", n)
			}
			if most != threads {
				t.Fatalf("%d threads: %d cleanings at once", threads, most)
			}
			for _, l := range []*Log{a, b} {
				l.cleanMu.Lock()
				got := l.cleaner.limits.DedupeBufferSize
				l.cleanMu.Unlock()
				if want := int64(1<<20) / int64(threads); got != want {
					t.Errorf("dedupe buffer per log %d, want %d", got, want)
				}
			}
		})
	}
}
