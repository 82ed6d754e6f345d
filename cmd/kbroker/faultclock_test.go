package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/testutil"
	"github.com/kbroker/kbroker/internal/wallclock"
)

// TestFaultClockFollowsFileOnSIGUSR2: the offset is read at start and
// again on each SIGUSR2; a bad file at start is an error, later it leaves
// the offset alone.
func TestFaultClockFollowsFileOnSIGUSR2(t *testing.T) {
	defer wallclock.SetOffset(0)
	path := filepath.Join(t.TempDir(), "clock")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	write("nonsense")
	if _, err := startFaultClock(context.Background(), path, logger); err == nil {
		t.Fatal("a bad clock file at start was accepted")
	}
	write("2h")
	ctx, cancel := context.WithCancel(context.Background())
	fc, err := startFaultClock(ctx, path, logger)
	if err != nil {
		t.Fatal(err)
	}
	defer fc.stop()
	defer cancel()
	if got := wallclock.Offset(); got != 2*time.Hour {
		t.Fatalf("offset at start %v, want 2h", got)
	}
	for _, step := range []struct {
		file string
		want time.Duration
	}{{"-3h", -3 * time.Hour}, {"bad", -3 * time.Hour}, {"0", 0}} {
		write(step.file)
		if err := syscall.Kill(os.Getpid(), syscall.SIGUSR2); err != nil {
			t.Fatal(err)
		}
		err := testutil.Poll(ctx, 10*time.Second, func() error {
			if got := wallclock.Offset(); got != step.want {
				return fmt.Errorf("offset %v after %q, want %v", got, step.file, step.want)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
