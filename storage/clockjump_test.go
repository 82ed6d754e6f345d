package storage

import (
	"testing"
	"time"
)

// jumpClocks are a log's two clocks under test: mono for durations, wall
// for the time of day, which a clock jump moves alone.
type jumpClocks struct {
	mono, wall time.Time
}

func (c *jumpClocks) advance(d time.Duration) { c.mono, c.wall = c.mono.Add(d), c.wall.Add(d) }

// TestClockJumpsRetentionAndRoll: the node's wall clock jumps forwards
// and backwards (as the chaos harness's clock-jump nemesis makes it)
// while the monotonic clock runs on. LogAppendTime stamps follow the
// wall clock; retention.ms deletes a segment only once the time of day
// is more than retention.ms past its newest timestamp, so a backward jump
// deletes nothing and a forward jump shorter than retention.ms deletes
// nothing; segment.ms of a segment with data compares record timestamps,
// so a backward jump does not roll a segment per batch.
func TestClockJumpsRetentionAndRoll(t *testing.T) {
	base := time.UnixMilli(1_800_000_000_000)
	c := &jumpClocks{mono: base, wall: base}
	cfg := DefaultLogConfig()
	cfg.MessageTimestampType = TimestampLogAppendTime
	cfg.RetentionMs = (4 * time.Hour).Milliseconds()
	cfg.SegmentAge = time.Hour
	l, err := OpenLog(t.TempDir(), cfg, LogOptions{
		Now:  func() time.Time { return c.mono },
		Wall: func() time.Time { return c.wall },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	segments := func() int {
		l.mu.RLock()
		defer l.mu.RUnlock()
		return len(l.mu.segments)
	}
	type step struct {
		name       string
		jump       time.Duration // of the wall clock alone
		wantStamp  time.Duration // LogAppendTime of the batch appended, from base
		wantSegs   int           // segments after the append
		wantDelete int           // segments retention deletes after it
	}
	steps := []step{
		{"first batch", 0, 0, 1, 0},
		{"back 2h: stamped 2h back, no roll, nothing deleted", -2 * time.Hour, -2*time.Hour + time.Minute, 1, 0},
		{"back to the host's time: no roll", 2 * time.Hour, 2 * time.Minute, 1, 0},
		{"forward 2h: the record time passed segment.ms, so it rolls", 2 * time.Hour, 2*time.Hour + 3*time.Minute, 2, 0},
		{"back to the host's time: nothing deleted", -2 * time.Hour, 4 * time.Minute, 2, 0},
		// The first segment's newest record (4m) is past retention.ms, the
		// second's (2h3m) is not: retention follows the time of day, as
		// Kafka's does, so only a forward jump longer than retention.ms
		// deletes early.
		{"forward 5h: rolls; the first segment expires", 5 * time.Hour, 5*time.Hour + 5*time.Minute, 3, 1},
		{"back 5h: nothing deleted, nothing comes back", -5 * time.Hour, 6 * time.Minute, 2, 0},
	}
	for i, s := range steps {
		if i > 0 {
			c.advance(time.Minute)
		}
		c.wall = c.wall.Add(s.jump)
		res, err := l.AppendAsLeader(makeBatch(plain(2)), AppendOptions{LogAppendTimeMs: -1})
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if want := base.Add(s.wantStamp).UnixMilli(); res.LogAppendTimeMs != want {
			t.Errorf("%s: LogAppendTime %d, want %d (wall clock %v)", s.name, res.LogAppendTimeMs, want, c.wall)
		}
		n, err := l.ApplyRetention(c.wall, cfg.RetentionMs, -1)
		if err != nil {
			t.Fatalf("%s: retention: %v", s.name, err)
		}
		if n != s.wantDelete {
			t.Errorf("%s: retention deleted %d segments, want %d", s.name, n, s.wantDelete)
		}
		if got := segments(); got != s.wantSegs-n {
			t.Errorf("%s: %d segments, want %d", s.name, got, s.wantSegs-n)
		}
	}
}
