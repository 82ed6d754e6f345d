package kafkaapi

import (
	"testing"
	"time"
)

func TestCappedWait(t *testing.T) {
	for _, tc := range []struct {
		ms   int32
		want time.Duration
	}{
		{0, 0},
		{500, 500 * time.Millisecond},
		{30_000, 30 * time.Second},
		{2_000_000_000, 30 * time.Second},
	} {
		if got := cappedWait(tc.ms, maxFetchWait); got != tc.want {
			t.Errorf("cappedWait(%d) = %v, want %v", tc.ms, got, tc.want)
		}
	}
}
