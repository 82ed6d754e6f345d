package monotime

import (
	"strings"
	"testing"
	"time"
)

func TestRoundTrip(t *testing.T) {
	now := time.Now()
	n := Of(now)
	back := Time(n)
	if !back.Equal(now) {
		t.Fatalf("Time(Of(%v)) = %v", now, back)
	}
	// The result carries a monotonic reading ("m=" in its String), so
	// durations against time.Now ignore wall clock steps.
	if !strings.Contains(back.String(), "m=") {
		t.Fatalf("%v has no monotonic reading", back)
	}
	later := Of(now.Add(time.Second))
	if time.Duration(later-n) != time.Second {
		t.Fatalf("a second later is %v later", time.Duration(later-n))
	}
	if d := time.Duration(Now() - n); d < 0 || d > time.Minute {
		t.Fatalf("Now is %v after an instant taken just before", d)
	}
}
