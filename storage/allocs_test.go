package storage

import "testing"

// TestHotPathAllocations holds the allocations per call of the storage
// hot paths at what they are now (allocation counts, unlike times, do not
// depend on the machine). A change that must allocate more raises the
// bound here and says why in its commit; `make bench-go` has the times.
func TestHotPathAllocations(t *testing.T) {
	_, l := openTestManager(t, OSFS{}, t.TempDir(), DefaultLogConfig())
	tmpl := benchBatch()
	buf := make([]byte, len(tmpl))
	var bufs ReadBuffers
	appendOne := func() {
		copy(buf, tmpl) // a fresh client batch with baseOffset 0
		if _, err := l.AppendAsLeader(buf, AppendOptions{LogAppendTimeMs: -1}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		max  float64
		run  func()
	}{
		{"AppendAsLeader", 4, appendOne},
		// A follower fetch's read at the log end: the one buffer for the
		// batches, and the result.
		{"AppendAsLeader, then Read at the tail", 5, func() {
			appendOne()
			if _, err := l.Read(l.LogEndOffset()-16, 1<<20, l.LogEndOffset(), true); err != nil {
				t.Fatal(err)
			}
		}},
		// The same read into pooled buffers given back after each
		// call (a fetch's, once its response is written): the append's
		// only, the buffer comes from the pool's free list (and the
		// ReadBuffers, reused here, costs one small slice per fetch).
		{"AppendAsLeader, then ReadPooled at the tail", 4, func() {
			appendOne()
			if _, err := l.ReadPooled(l.LogEndOffset()-16, 1<<20, l.LogEndOffset(), true, &bufs); err != nil {
				t.Fatal(err)
			}
			bufs.Release()
		}},
	} {
		if got := testing.AllocsPerRun(200, tc.run); got > tc.max {
			t.Errorf("%s: %.1f allocations per call, want <= %.0f", tc.name, got, tc.max)
		}
	}
}
