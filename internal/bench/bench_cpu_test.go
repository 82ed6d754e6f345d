package bench

import (
	"os"
	"testing"
	"time"
)

func TestProcCPUReadsThisProcess(t *testing.T) {
	// Burn a little CPU so the count cannot be zero by rounding.
	deadline := time.Now().Add(30 * time.Millisecond)
	for x := 0; time.Now().Before(deadline); x++ {
		_ = x * x
	}
	d, err := procCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if d <= 0 {
		t.Fatalf("procCPU(self) = %v, want > 0 after spinning", d)
	}
	if _, err := procCPU(-1); err == nil {
		t.Fatal("procCPU(-1): want an error")
	}
}

func TestPerRecord(t *testing.T) {
	for _, tc := range []struct {
		before, after time.Duration
		records       int64
		want          float64
	}{
		{0, time.Second, 1_000_000, 1},
		{time.Second, 3 * time.Second, 500_000, 4},
		{0, time.Second, 0, 0},
	} {
		if got := perRecord(tc.before, tc.after, tc.records); got != tc.want {
			t.Errorf("perRecord(%v, %v, %d) = %v, want %v", tc.before, tc.after, tc.records, got, tc.want)
		}
	}
}
