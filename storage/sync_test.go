package storage

import (
	"sync"
	"testing"
)

// TestSyncTo: SyncTo moves the recovery point to the log end offset it
// saw, is a no-op when the recovery point already covers the offset, and
// concurrent callers all end covered (group commit).
func TestSyncTo(t *testing.T) {
	_, l := openTestManager(t, OSFS{}, t.TempDir(), DefaultLogConfig())
	appendN := func(n int) {
		for range n {
			b := makeBatch(spec{n: 2, valueSize: 10, pid: -1, epoch: -1, seq: -1, ts: testNow})
			if _, err := l.AppendAsLeader(b, AppendOptions{LogAppendTimeMs: -1}); err != nil {
				t.Fatal(err)
			}
		}
	}
	appendN(3)
	if rp := l.RecoveryPoint(); rp != 0 {
		t.Fatalf("recovery point %d before any sync, want 0", rp)
	}
	if err := l.SyncTo(l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if rp, leo := l.RecoveryPoint(), l.LogEndOffset(); rp != leo {
		t.Fatalf("recovery point %d after SyncTo, want the log end offset %d", rp, leo)
	}
	if err := l.SyncTo(1); err != nil { // covered: nothing to do
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			b := makeBatch(spec{n: 1, valueSize: 10, pid: -1, epoch: -1, seq: -1, ts: testNow})
			res, err := l.AppendAsLeader(b, AppendOptions{LogAppendTimeMs: -1})
			if err == nil {
				err = l.SyncTo(res.LastOffset + 1)
			}
			if err != nil {
				t.Error(err)
				return
			}
			if rp := l.RecoveryPoint(); rp <= res.LastOffset {
				t.Errorf("recovery point %d does not cover offset %d after its SyncTo", rp, res.LastOffset)
			}
		})
	}
	wg.Wait()
}

// BenchmarkSyncToParallel measures appends each followed by SyncTo from
// parallel goroutines: group commit lets one fsync cover many batches.
func BenchmarkSyncToParallel(b *testing.B) {
	_, l := openTestManager(b, OSFS{}, b.TempDir(), DefaultLogConfig())
	tmpl := benchBatch()
	b.SetBytes(int64(len(tmpl)))
	b.ReportAllocs()
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		buf := make([]byte, len(tmpl))
		for pb.Next() {
			copy(buf, tmpl)
			res, err := l.AppendAsLeader(buf, AppendOptions{LogAppendTimeMs: -1})
			if err == nil {
				err = l.SyncTo(res.LastOffset + 1)
			}
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
}
