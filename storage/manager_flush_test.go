package storage

import (
	"testing"
	"time"
)

// The flush schedule flushes a log when its flush.ms has passed and not
// before, follows flush.ms changes, and keeps one entry per log however
// many ticks pass.
func TestFlushScheduleFlushesOnlyDueLogs(t *testing.T) {
	slow, fast := DefaultLogConfig(), DefaultLogConfig()
	slow.FlushInterval = time.Hour
	fast.FlushInterval = 30 * time.Second
	m, a := openTestManager(t, OSFS{}, t.TempDir(), slow)
	t.Cleanup(func() { m.Close() })
	b, err := m.GetOrCreate("t", 1, fast)
	if err != nil {
		t.Fatal(err)
	}
	never, err := m.GetOrCreate("t", 2, DefaultLogConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []*Log{a, b, never} {
		mustAppend(t, l, plain(3))
	}
	start := time.Now()
	entries := func() int {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.mu.flushes.Len()
	}
	type want struct{ a, b, never int64 }
	steps := []struct {
		name string
		at   time.Duration
		want want
	}{
		{"before any flush.ms passed", 0, want{0, 0, 0}},
		{"after the short flush.ms", 2 * time.Minute, want{0, 3, 0}},
		{"after the long flush.ms", 2 * time.Hour, want{3, 3, 0}},
	}
	for _, s := range steps {
		for range 20 { // repeated ticks change nothing more
			m.flushDue(start.Add(s.at))
		}
		if got := (want{a.RecoveryPoint(), b.RecoveryPoint(), never.RecoveryPoint()}); got != s.want {
			t.Errorf("%s: recovery points %+v, want %+v", s.name, got, s.want)
		}
		if n := entries(); n != 2 {
			t.Errorf("%s: %d entries in the flush schedule, want 2 (one per log with flush.ms)", s.name, n)
		}
	}

	// flush.ms set on a log that had none schedules it; set back to 0,
	// its entry goes at the next pop.
	cfg := DefaultLogConfig()
	cfg.FlushInterval = time.Minute
	if err := never.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	m.flushDue(start.Add(3 * time.Hour))
	if rp := never.RecoveryPoint(); rp != 3 {
		t.Errorf("after flush.ms was set: recovery point %d, want 3", rp)
	}
	if err := never.SetConfig(DefaultLogConfig()); err != nil {
		t.Fatal(err)
	}
	m.flushDue(start.Add(4 * time.Hour))
	if n := entries(); n != 2 {
		t.Errorf("after flush.ms was unset: %d entries, want 2", n)
	}

	// A deleted log leaves the schedule.
	if err := m.Delete("t", 1); err != nil {
		t.Fatal(err)
	}
	m.flushDue(start.Add(5 * time.Hour))
	if n := entries(); n != 1 {
		t.Errorf("after a delete: %d entries, want 1", n)
	}
}
