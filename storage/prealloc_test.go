package storage

import (
	"os"
	"testing"

	"github.com/kbroker/kbroker/storage/logfs"
)

// segmentSizes returns each segment's bytes written and .log file size.
func segmentSizes(t testing.TB, l *Log) (written, onDisk []int64) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.mu.segments {
		fi, err := os.Stat(logfs.FileName(l.Dir(), s.base, logfs.LogSuffix))
		if err != nil {
			t.Fatal(err)
		}
		written, onDisk = append(written, s.size), append(onDisk, fi.Size())
	}
	return written, onDisk
}

// preallocate=true: the active segment's .log is segment.bytes long from
// its creation, inactive segments are trimmed at roll and the active one
// at close, and a crash (the zeroes after the last batch still on disk)
// loses nothing: recovery ends the log at the last batch and appends go
// on from there.
func TestPreallocate(t *testing.T) {
	tests := []struct {
		name       string
		checkpoint bool // recovery point at the log end before the crash
	}{
		{"crash, no recovery point", false},
		{"crash, recovery point at the end", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := smallConfig()
			cfg.SegmentBytes = 4096
			cfg.Preallocate = true
			m, l := openTestManager(t, OSFS{}, dir, cfg)
			if _, disk := segmentSizes(t, l); disk[0] != cfg.SegmentBytes {
				t.Fatalf("new log's segment is %d bytes on disk, want %d", disk[0], cfg.SegmentBytes)
			}
			var end int64
			for range 100 {
				end = mustAppend(t, l, plain(3)).LastOffset + 1
			}
			written, disk := segmentSizes(t, l)
			if len(written) < 3 {
				t.Fatalf("%d segments, want rolls", len(written))
			}
			for i := range len(written) - 1 {
				if disk[i] != written[i] {
					t.Fatalf("inactive segment %d: %d bytes on disk, %d written", i, disk[i], written[i])
				}
			}
			if last := len(written) - 1; disk[last] != cfg.SegmentBytes || written[last] >= cfg.SegmentBytes {
				t.Fatalf("active segment: %d bytes on disk, %d written", disk[last], written[last])
			}
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			if tc.checkpoint {
				m.mu.Lock()
				err := m.checkpointLocked()
				m.mu.Unlock()
				if err != nil {
					t.Fatal(err)
				}
			}

			// Crash: no Close, the active segment keeps its zeroes.
			m2, l2 := openTestManager(t, OSFS{}, dir, cfg)
			if got := l2.LogEndOffset(); got != end {
				t.Fatalf("log end offset %d after recovery, want %d", got, end)
			}
			checkContiguous(t, l2)
			for range 20 {
				end = mustAppend(t, l2, plain(2)).LastOffset + 1
			}
			checkContiguous(t, l2)
			if l2.LogEndOffset() != end {
				t.Fatalf("log end offset %d after appends, want %d", l2.LogEndOffset(), end)
			}

			// A clean close trims the active segment; the reopen finds
			// every record.
			if err := m2.Close(); err != nil {
				t.Fatal(err)
			}
			_, l3 := openTestManager(t, OSFS{}, dir, cfg)
			written, disk = segmentSizes(t, l3)
			for i := range written {
				if disk[i] != written[i] {
					t.Fatalf("after a clean close, segment %d: %d bytes on disk, %d written", i, disk[i], written[i])
				}
			}
			if l3.LogEndOffset() != end {
				t.Fatalf("log end offset %d after a clean restart, want %d", l3.LogEndOffset(), end)
			}
			checkContiguous(t, l3)
		})
	}
}
