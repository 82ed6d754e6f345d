package bench

import (
	"testing"
	"time"
)

// The summary keeps the topics' order in its first line and gives the
// nearest-rank minimum, median, p90 and maximum.
func TestNewTopicSummary(t *testing.T) {
	var took []int64
	for _, d := range []int{30, 10, 20, 50, 40} {
		took = append(took, int64(time.Duration(d)*time.Millisecond))
	}
	got := newTopicSummary(took)
	want := "per topic (ms): 30.0 10.0 20.0 50.0 40.0\nmin 10.0 ms, median 30.0 ms, p90 50.0 ms, max 50.0 ms"
	if got != want {
		t.Fatalf("summary:\n%s\nwant:\n%s", got, want)
	}
}
