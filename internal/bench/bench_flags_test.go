package bench

import (
	"bytes"
	"testing"
	"time"
)

func TestBenchFlagDefaults(t *testing.T) {
	c, err := parseBenchFlags(nil, &bytes.Buffer{})
	if err != nil || c.rf != 3 || c.settle != 14*time.Second {
		t.Fatalf("defaults: rf %d, settle %v, %v; want 3, 14s", c.rf, c.settle, err)
	}
}
