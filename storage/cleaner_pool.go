package storage

import (
	"cmp"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// The cleaner's broker-wide settings can change while the Manager runs
// (Kafka's dynamic log.cleaner.* keys): the backoff re-arms Run's ticker,
// the thread count sizes the next CleanLogs' worker pool, the dedupe
// buffer sizes the next cleaning's key map, and the I/O rate applies at
// once to the throttle shared by the cleanings in progress.

// minDedupePerLog keeps a thread's share of the dedupe buffer a usable key
// map when the buffer is split among many threads.
const minDedupePerLog = 1024

// SetCleanerBackoff sets how often Run looks for compacted logs to clean
// (log.cleaner.backoff.ms, DefaultCleanerBackoff unless set). A running
// Run re-arms its ticker with it.
func (m *Manager) SetCleanerBackoff(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if d <= 0 || d == m.mu.cleanerBackoff {
		return
	}
	m.mu.cleanerBackoff = d
	select {
	case m.cleanerBackoffChanged <- struct{}{}:
	default: // Run has a wake-up pending; it reads the newest value
	}
}

// SetCleaner sets log.cleaner.enable (false: Run cleans nothing) and the
// limits cleanings run with (log.cleaner.dedupe.buffer.size, shared out
// among the logs cleaned at once, from the next cleaning;
// log.cleaner.io.max.bytes.per.second, at once, across them).
func (m *Manager) SetCleaner(enable bool, lim CleanerLimits) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mu.cleanerDisabled = !enable
	m.mu.cleanerLimits = lim
	m.cleanerThrottle.SetRate(lim.IOMaxBytesPerSecond, time.Now())
}

// SetCleanerThreads sets how many logs CleanLogs cleans at once
// (log.cleaner.threads; at least 1), from its next call.
func (m *Manager) SetCleanerThreads(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mu.cleanerThreads = max(n, 1)
}

// CleanLogs cleans the open logs whose cleanup.policy includes compact
// and that need it (a dirty ratio at least their min.cleanable.dirty.ratio,
// or a record older than max.compaction.lag.ms still dirty), dirtiest
// first, up to log.cleaner.threads at once, without holding the Manager's
// lock while cleaning. A log with more dirty keys than its share of the
// dedupe buffer holds gets one pass here and the rest on later calls. Run
// calls it every cleaner backoff unless the cleaner is disabled; the
// workers are its own and have ended when it returns. It returns how many
// logs it cleaned.
func (m *Manager) CleanLogs(ctx context.Context, now time.Time) int {
	m.mu.Lock()
	if m.mu.closed {
		m.mu.Unlock()
		return 0
	}
	var logs []*Log
	for _, l := range m.mu.logs {
		if l.config().Compact() {
			logs = append(logs, l)
		}
	}
	lim, threads := m.mu.cleanerLimits, m.mu.cleanerThreads
	m.mu.Unlock()
	lim.Stop, lim.shared, lim.sleep = ctx.Done(), m.cleanerThrottle, m.cleanerSleep
	cands := make([]cleanCandidate, 0, len(logs))
	for _, l := range logs {
		c, err := l.cleanability(now)
		if err != nil {
			if !errors.Is(err, ErrClosed) {
				m.logger.Error("dirty ratio failed", "dir", l.Dir(), "err", err)
			}
			continue
		}
		cands = append(cands, c)
	}
	order := cleanOrder(cands)
	workers := min(threads, len(order))
	if workers == 0 {
		return 0
	}
	// As Kafka's threads, the workers split the dedupe buffer: the key
	// maps of the cleanings at once stay within it.
	if size := cmp.Or(lim.DedupeBufferSize, DefaultDedupeBufferSize); workers > 1 {
		lim.DedupeBufferSize = max(size/int64(workers), minDedupePerLog)
	}
	var next, cleaned atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		// Each worker takes the dirtiest log not yet taken.
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(order) || ctx.Err() != nil {
					return
				}
				l := order[i].l
				l.SetCleanerLimits(lim)
				if _, err := l.Clean(now); err != nil {
					if !errors.Is(err, ErrClosed) {
						m.logger.Error("cleaning failed", "dir", l.Dir(), "err", err)
					}
					continue
				}
				cleaned.Add(1)
			}
		})
	}
	wg.Wait()
	return int(cleaned.Load())
}

// CleanerState is the cleaner settings a Manager runs with now.
type CleanerState struct {
	Enabled             bool
	Threads             int
	Backoff             time.Duration
	DedupeBufferSize    int64
	IOMaxBytesPerSecond float64 // the throttle's rate
}

// CleanerState returns the cleaner settings in effect.
func (m *Manager) CleanerState() CleanerState {
	m.mu.Lock()
	s := CleanerState{Enabled: !m.mu.cleanerDisabled, Threads: m.mu.cleanerThreads, Backoff: m.mu.cleanerBackoff, DedupeBufferSize: m.mu.cleanerLimits.DedupeBufferSize}
	m.mu.Unlock()
	s.IOMaxBytesPerSecond = m.cleanerThrottle.Rate()
	return s
}
