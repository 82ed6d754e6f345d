package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/kbroker/kbroker/internal/wallclock"
)

// faultClock is the test-only clock-jump hook of `serve --fault-clock-file
// PATH`: it sets the broker's wall clock offset (internal/wallclock) from
// PATH at start and again on every SIGUSR2, so a test harness can jump one
// node's clock while the others keep the host's. Without the flag SIGUSR2
// is not handled and the offset stays 0.
type faultClock struct {
	path   string
	logger *slog.Logger
	sig    chan os.Signal
	done   sync.WaitGroup
}

// startFaultClock loads path and starts the goroutine that reloads it on
// SIGUSR2 until ctx is done; stop waits for it.
func startFaultClock(ctx context.Context, path string, logger *slog.Logger) (*faultClock, error) {
	f := &faultClock{path: path, logger: logger, sig: make(chan os.Signal, 1)}
	if err := f.load(); err != nil {
		return nil, err
	}
	signal.Notify(f.sig, syscall.SIGUSR2)
	f.done.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-f.sig:
				if err := f.load(); err != nil {
					f.logger.Error("fault injection: wall clock offset not changed", "err", err)
				}
			}
		}
	})
	return f, nil
}

func (f *faultClock) load() error {
	before := wallclock.Offset()
	d, err := wallclock.LoadOffset(f.path)
	if err != nil {
		return err
	}
	if d != 0 || before != 0 {
		f.logger.Warn("fault injection: wall clock offset set (test-only --fault-clock-file)",
			"offset", d.String(), "was", before.String(), "file", f.path)
	}
	return nil
}

// stop ends SIGUSR2 handling; the caller cancels ctx first.
func (f *faultClock) stop() {
	signal.Stop(f.sig)
	f.done.Wait()
}
