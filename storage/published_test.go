package storage

import (
	"testing"
	"time"
)

// TestOffsetsReadableWhileAppending: the offsets the acks=all path reads
// (log end and start offsets, the high watermark) and the high watermark
// update itself never wait for mu, which an append holds across its write.
func TestOffsetsReadableWhileAppending(t *testing.T) {
	_, l := openTestManager(t, OSFS{}, t.TempDir(), DefaultLogConfig())
	mustAppend(t, l, plain(3))
	mustAppend(t, l, plain(2))

	l.mu.Lock() // an append in progress
	done := make(chan [3]int64)
	go func() {
		l.SetHighWatermarkCheckpoint(4)
		done <- [3]int64{l.LogEndOffset(), l.LogStartOffset(), l.HighWatermarkCheckpoint()}
	}()
	var got [3]int64
	select {
	case got = <-done:
	case <-time.After(10 * time.Second):
		l.mu.Unlock()
		t.Fatal("offset readers blocked on the log's lock")
	}
	l.mu.Unlock()
	if want := [3]int64{5, 0, 4}; got != want {
		t.Fatalf("LEO, log start, HW = %v, want %v", got, want)
	}
	// Clamped to the log end offset, as before.
	l.SetHighWatermarkCheckpoint(99)
	if hw := l.HighWatermarkCheckpoint(); hw != 5 {
		t.Fatalf("HW after setting 99 = %d, want the LEO 5", hw)
	}
}

// TestPublishedOffsetsFollowTheLog: every path that moves the log end or
// start offset publishes it.
func TestPublishedOffsetsFollowTheLog(t *testing.T) {
	cfg := DefaultLogConfig()
	cfg.SegmentBytes = 400 // a few batches per segment
	_, l := openTestManager(t, OSFS{}, t.TempDir(), cfg)
	for range 10 {
		mustAppend(t, l, plain(2))
	}
	check := func(step string, leo, start int64) {
		t.Helper()
		l.mu.RLock()
		lockedLEO, lockedStart := l.mu.logEndOffset, l.mu.logStartOffset
		l.mu.RUnlock()
		if got := l.LogEndOffset(); got != leo || got != lockedLEO {
			t.Fatalf("%s: LogEndOffset %d, locked %d, want %d", step, got, lockedLEO, leo)
		}
		if got := l.LogStartOffset(); got != start || got != lockedStart {
			t.Fatalf("%s: LogStartOffset %d, locked %d, want %d", step, got, lockedStart, start)
		}
	}
	check("appended", 20, 0)
	l.SetHighWatermarkCheckpoint(20)

	start, err := l.DeleteRecordsBefore(7)
	if err != nil {
		t.Fatal(err)
	}
	check("delete records", 20, start)

	if err := l.TruncateTo(14); err != nil {
		t.Fatal(err)
	}
	check("truncated", 14, start)
	if hw := l.HighWatermarkCheckpoint(); hw != 14 {
		t.Fatalf("HW after truncating to 14 = %d, want 14", hw)
	}

	if err := l.TruncateFullyAndStartAt(100); err != nil {
		t.Fatal(err)
	}
	check("truncated fully", 100, 100)
	if hw := l.HighWatermarkCheckpoint(); hw != 100 {
		t.Fatalf("HW after a full truncation at 100 = %d, want 100", hw)
	}
}
