package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// serveAdmin runs the admin HTTP listener (admin.listener) until ctx ends:
//
//	/metrics  Prometheus metrics
//	/healthz  200 while the process serves HTTP at all
//	/readyz   200 once the broker is registered, unfenced and accepting
//	          requests; 503 otherwise
//	/debug/pprof/...  Go's profiles, only with admin.pprof.enable
func (n *Node) serveAdmin(ctx context.Context, ln net.Listener) {
	mux := http.NewServeMux()
	if n.cfg.AdminPprofEnable {
		enableProfiling(mux)
	}
	mux.Handle("/metrics", promhttp.HandlerFor(n.metrics.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := n.readiness(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	// No WriteTimeout: /debug/pprof/profile streams for its seconds= argument.
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	stop := context.AfterFunc(ctx, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	})
	defer stop()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		n.logger.Warn("admin listener stopped", "err", err)
	}
}

// Sampling rates while profiling is on: one mutex contention event in
// mutexProfileFraction, and blocking events of at least blockProfileRate
// nanoseconds, so the profiles cost little on a busy broker.
const (
	mutexProfileFraction = 100
	blockProfileRate     = 10_000 // 10 µs
)

// enableProfiling registers net/http/pprof's handlers on mux and turns on
// the mutex and block profiles, which are off by default in Go.
func enableProfiling(mux *http.ServeMux) {
	runtime.SetMutexProfileFraction(mutexProfileFraction)
	runtime.SetBlockProfileRate(blockProfileRate)
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
}

// readiness reports why the node is not ready, or nil. A broker is ready
// once registered and unfenced; a controller-only node, which never
// registers as a broker, once it has started (its metadata caught up with
// the quorum's) and knows an active controller.
func (n *Node) readiness() error {
	select {
	case <-n.ready:
	default:
		return errors.New("starting")
	}
	if !n.cfg.IsBroker() {
		if n.store.ControllerID() < 0 {
			return errors.New("no active controller known")
		}
		return nil
	}
	b, ok := n.store.Image().Brokers[n.cfg.NodeID]
	switch {
	case !ok:
		return errors.New("not registered")
	case b.Fenced:
		return errors.New("fenced")
	}
	return nil
}
