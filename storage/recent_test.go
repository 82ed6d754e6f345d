package storage

import "testing"

func TestRecentBatchesFind(t *testing.T) {
	var r recentBatches
	if _, ok := (*recentBatches)(nil).find(0); ok {
		t.Fatal("nil ring found an offset")
	}
	// Batches of 10 offsets at 100-byte steps: [0,9]@0, [10,19]@100, ...
	// then a compaction gap: [200,209]@... after [30,39].
	add := func(base, last, pos int64) { r.add(base, last, pos) }
	add(0, 9, 0)
	add(10, 19, 100)
	add(20, 29, 200)
	add(30, 39, 300)
	add(200, 209, 400)
	for _, tc := range []struct {
		offset, pos int64
		ok          bool
	}{
		{0, 0, true}, {9, 0, true}, {10, 100, true}, {35, 300, true},
		{40, 400, true}, // in the gap: the first batch after it
		{209, 400, true},
		{210, 0, false}, // past the newest
		{-1, 0, false},
	} {
		pos, ok := r.find(tc.offset)
		if ok != tc.ok || ok && pos != tc.pos {
			t.Errorf("find(%d) = %d, %v; want %d, %v", tc.offset, pos, ok, tc.pos, tc.ok)
		}
	}
	// Wrap around: only the last recentBatchesCap batches are held.
	for i := range int64(3 * recentBatchesCap) {
		add(1000+10*i, 1009+10*i, 1000+100*i)
	}
	oldest := int64(1000 + 10*2*recentBatchesCap)
	if _, ok := r.find(oldest - 1); ok {
		t.Errorf("find(%d) before the oldest held batch: want not found", oldest-1)
	}
	if pos, ok := r.find(oldest); !ok || pos != 1000+100*2*recentBatchesCap {
		t.Errorf("find(%d) = %d, %v; want the oldest held batch", oldest, pos, ok)
	}
}

// BenchmarkReadTail measures a follower's read of the batch just appended
// (the acks=all path), from a log with a long index behind it.
func BenchmarkReadTail(b *testing.B) {
	_, l := openTestManager(b, OSFS{}, b.TempDir(), DefaultLogConfig())
	tmpl := benchBatch()
	buf := make([]byte, len(tmpl))
	appendOne := func() {
		copy(buf, tmpl)
		if _, err := l.AppendAsLeader(buf, AppendOptions{LogAppendTimeMs: -1}); err != nil {
			b.Fatal(err)
		}
	}
	for range 4096 { // 64 MiB, an index entry per batch
		appendOne()
	}
	b.SetBytes(int64(len(tmpl)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		appendOne()
		b.StartTimer()
		leo := l.LogEndOffset()
		if got, err := l.Read(leo-16, 1<<20, leo, true); err != nil || len(got) != len(tmpl) {
			b.Fatalf("read %d bytes, %v", len(got), err)
		}
	}
}

// BenchmarkReadTailPooled is BenchmarkReadTail into pooled buffers given
// back after each read, as a fetch does once its response is written.
func BenchmarkReadTailPooled(b *testing.B) {
	_, l := openTestManager(b, OSFS{}, b.TempDir(), DefaultLogConfig())
	tmpl := benchBatch()
	buf := make([]byte, len(tmpl))
	appendOne := func() {
		copy(buf, tmpl)
		if _, err := l.AppendAsLeader(buf, AppendOptions{LogAppendTimeMs: -1}); err != nil {
			b.Fatal(err)
		}
	}
	for range 4096 { // 64 MiB, an index entry per batch
		appendOne()
	}
	var bufs ReadBuffers
	b.SetBytes(int64(len(tmpl)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		appendOne()
		b.StartTimer()
		leo := l.LogEndOffset()
		if got, err := l.ReadPooled(leo-16, 1<<20, leo, true, &bufs); err != nil || len(got) != len(tmpl) {
			b.Fatalf("read %d bytes, %v", len(got), err)
		}
		bufs.Release()
	}
}
