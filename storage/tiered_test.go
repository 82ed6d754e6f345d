package storage

import (
	"testing"
	"time"
)

// TestRemoteLocalRetention: a remote-storage log applies the local
// retention limits, and never deletes a segment holding an offset the
// remote store does not have.
func TestRemoteLocalRetention(t *testing.T) {
	newLog := func(t *testing.T, cfg LogConfig) *Log {
		cfg.SegmentBytes = 1024
		l, err := OpenLog(t.TempDir(), cfg, LogOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		for range 70 {
			mustAppend(t, l, plain(5))
		}
		return l
	}
	tests := []struct {
		name          string
		remote        bool
		localBytes    int64
		copiedSegs    int // segments copied (-1: none copied)
		wantStartSegs int // segments deleted
	}{
		{"no remote storage: retention.bytes", false, -2, -1, -1},
		{"nothing copied: nothing deleted", true, 0, -1, 0},
		{"two copied: two deleted", true, 0, 2, 2},
		{"local.retention.bytes -2 is retention.bytes, within the copied", true, -2, 3, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultLogConfig()
			cfg.RetentionBytes = 3000
			cfg.RemoteStorageEnable = tc.remote
			cfg.LocalRetentionBytes = tc.localBytes
			l := newLog(t, cfg)
			all := l.ClosedSegments(-1, l.LogEndOffset())
			if len(all) < 6 {
				t.Fatalf("%d closed segments", len(all))
			}
			if tc.copiedSegs > 0 {
				l.SetRemoteCopiedOffset(all[tc.copiedSegs-1].EndOffset)
			}
			if _, err := l.ApplyRetention(time.Now(), -1, cfg.RetentionBytes); err != nil {
				t.Fatal(err)
			}
			start := l.LogStartOffset()
			switch {
			case tc.wantStartSegs == 0 && start != 0:
				t.Fatalf("log start %d, want 0", start)
			case tc.wantStartSegs > 0 && start != all[tc.wantStartSegs].BaseOffset:
				t.Fatalf("log start %d, want %d", start, all[tc.wantStartSegs].BaseOffset)
			case tc.wantStartSegs < 0 && tc.copiedSegs > 0 && start > all[tc.copiedSegs].BaseOffset:
				t.Fatalf("log start %d beyond the copied segments (%d)", start, all[tc.copiedSegs].BaseOffset)
			case tc.wantStartSegs < 0 && (start == 0 || l.Size() > 3000+1024):
				t.Fatalf("retention.bytes kept log start %d, %d bytes", start, l.Size())
			}
		})
	}
}

// TestClosedSegments: only inactive segments wholly below upTo, from the
// first one past after, with their files and leader epochs.
func TestClosedSegments(t *testing.T) {
	cfg := DefaultLogConfig()
	cfg.SegmentBytes = 1024
	l, err := OpenLog(t.TempDir(), cfg, LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for range 30 {
		mustAppend(t, l, plain(5))
	}
	all := l.ClosedSegments(-1, l.LogEndOffset())
	if len(all) < 4 {
		t.Fatalf("%d closed segments", len(all))
	}
	for i, s := range all {
		if i > 0 && s.BaseOffset != all[i-1].EndOffset+1 || s.Size <= 0 || s.Log == "" || s.OffsetIndex == "" || s.TimeIndex == "" {
			t.Fatalf("segment %d: %+v", i, s)
		}
	}
	if got := l.ClosedSegments(all[1].EndOffset, l.LogEndOffset()); len(got) != len(all)-2 || got[0].BaseOffset != all[2].BaseOffset {
		t.Fatalf("after segment 1: %d segments", len(got))
	}
	if got := l.ClosedSegments(-1, all[2].EndOffset); len(got) != 2 {
		t.Fatalf("below segment 2's end: %d segments", len(got))
	}
	if got := l.ClosedSegments(all[1].BaseOffset, l.LogEndOffset()); got[0].BaseOffset != all[1].BaseOffset {
		t.Fatalf("after an offset inside segment 1: starts at %d", got[0].BaseOffset)
	}
}
