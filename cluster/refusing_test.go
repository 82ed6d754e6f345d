package cluster

import (
	"testing"
	"time"
)

// TestRefusingBrokers: a refused connection marks a broker at its epoch
// for refusingFor; a restart (new epoch) or time clears it.
func TestRefusingBrokers(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var r refusingBrokers
	r.mark(2, 7, t0)
	for _, tc := range []struct {
		name  string
		id    int32
		epoch int64
		at    time.Time
		want  bool
	}{
		{"just refused", 2, 7, t0.Add(time.Millisecond), true},
		{"still within", 2, 7, t0.Add(refusingFor - time.Millisecond), true},
		{"expired", 2, 7, t0.Add(refusingFor), false},
		{"re-registered", 2, 8, t0.Add(time.Millisecond), false},
		{"another broker", 3, 7, t0.Add(time.Millisecond), false},
	} {
		if got := r.refuses(tc.id, tc.epoch, tc.at); got != tc.want {
			t.Errorf("%s: refuses(%d, %d) = %v, want %v", tc.name, tc.id, tc.epoch, got, tc.want)
		}
	}
	r.clear(2) // fetched from again
	if r.refuses(2, 7, t0.Add(time.Millisecond)) {
		t.Error("broker 2 still marked after clear")
	}
}
