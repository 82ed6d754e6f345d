package server

import (
	"context"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/kafkatest"
)

// failingListener returns EMFILE from its first failures Accepts, as a
// listener does while the process is out of file descriptors.
type failingListener struct {
	net.Listener
	failures int32
	calls    atomic.Int32
}

func (l *failingListener) Accept() (net.Conn, error) {
	if l.calls.Add(1) <= l.failures {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

// countingHandler counts the log records at Warn and above.
type countingHandler struct {
	mu    sync.Mutex
	warns int
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		h.mu.Lock()
		h.warns++
		h.mu.Unlock()
	}
	return nil
}
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countingHandler) WithGroup(string) slog.Handler      { return h }

// After a run of EMFILE the acceptor backs off, logs once rather than per
// failure, and then accepts again.
func TestAcceptBacksOffOnEMFILE(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const failures = 6
	ln := &failingListener{Listener: inner, failures: failures}
	logs := &countingHandler{}
	srv := startServerLogged(t, testServerConfig(), ln, slog.New(logs))

	start := time.Now()
	c := kafkatest.Dial(t, srv.addr)
	kafkatest.APIVersionsOK(t, c)
	elapsed := time.Since(start)
	if got := ln.calls.Load(); got < failures+1 {
		t.Fatalf("%d Accept calls, want at least %d", got, failures+1)
	}
	if got := metricValue(t, srv.metrics.acceptErrors.WithLabelValues("PLAINTEXT")); got != failures {
		t.Errorf("accept errors = %v, want %d", got, failures)
	}
	// 5+10+20+40+80+160 ms of backoff.
	t.Logf("served after %v of backoff", elapsed)
	logs.mu.Lock()
	defer logs.mu.Unlock()
	if logs.warns > 1 {
		t.Errorf("%d accept warnings for %d failures within %v, want at most 1", logs.warns, failures, acceptLogEvery)
	}
}
