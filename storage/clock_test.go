package storage

import (
	"strings"
	"testing"
	"time"
)

// monotonic reports whether t carries a monotonic clock reading, which
// makes Sub, Before and After immune to wall-clock jumps (package time).
func monotonic(t time.Time) bool { return strings.Contains(t.String(), " m=") }

// TestDurationBasesAreMonotonic: the times storage measures durations
// from (flush.ms since the last flush, the age of an empty active
// segment for segment.ms, file.delete.delay.ms of deleted segments and
// partitions) carry a monotonic reading, so a wall clock stepped
// backwards or forwards on the node neither stops nor hurries them.
// Retention and segment.ms of a segment with data compare record
// timestamps with the wall clock, as Kafka does: those follow the wall
// clock by definition.
func TestDurationBasesAreMonotonic(t *testing.T) {
	cfg := DefaultLogConfig()
	cfg.SegmentBytes = 200
	cfg.FileDeleteDelayMs = 60_000
	m, l := openTestManager(t, OSFS{}, t.TempDir(), cfg)
	defer m.Close()
	for range 4 {
		mustAppend(t, l, plain(3))
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.DeleteRecordsBefore(l.LogEndOffset() - 1); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateTo(l.LogEndOffset() - 1); err != nil {
		t.Fatal(err)
	}
	if err := m.Delete("t", 0); err != nil {
		t.Fatal(err)
	}
	l.mu.RLock()
	times := map[string]time.Time{"last flush": l.mu.lastFlush}
	for i, s := range l.mu.segments {
		times["segment created "+string(rune('0'+i))] = s.created
	}
	l.mu.RUnlock()
	m.deletes.mu.Lock()
	for i, p := range m.deletes.pending {
		times["delete due "+string(rune('0'+i))] = p.due
	}
	m.deletes.mu.Unlock()
	if len(times) < 3 {
		t.Fatalf("too few times checked: %v", times)
	}
	for what, at := range times {
		if !monotonic(at) {
			t.Errorf("%s (%v) has no monotonic reading", what, at)
		}
	}
}
