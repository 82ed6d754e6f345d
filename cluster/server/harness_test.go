package server

import (
	"context"
	"log/slog"
	"math"
	"net"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/testutil"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testServer is a bare request server (no node behind it) serving the
// test's own API rows, for connection-layer tests that need no storage.
type testServer struct {
	*Server
	addr   string
	cancel context.CancelFunc
	done   chan struct{}
}

// testServerConfig is a server config without limits, for tests to edit.
func testServerConfig() Config {
	return Config{
		maxRequestSize:      1 << 20,
		maxConnections:      math.MaxInt32,
		maxConnectionsPerIP: math.MaxInt32,
		frameReadTimeout:    10 * time.Second,
	}
}

// startServer serves apis (plus ApiVersions) on 127.0.0.1 with cfg. A nil
// ln binds a fresh listener.
func startServer(t testing.TB, cfg Config, ln net.Listener, apis ...API) *testServer {
	t.Helper()
	return startServerLogged(t, cfg, ln, testutil.Logger(t), apis...)
}

// startServerLogged is startServer logging to logger.
func startServerLogged(t testing.TB, cfg Config, ln net.Listener, logger *slog.Logger, apis ...API) *testServer {
	t.Helper()
	ts := &testServer{done: make(chan struct{})}
	apis = append(apis, API{Key: apiVersionsKey, Min: 0, Max: 4,
		Handle: func(_ context.Context, rc *RequestContext, _ kmsg.Request) (kmsg.Response, error) {
			return ts.APIVersions(rc.Header.APIVersion), nil
		}})
	ts.Server = New(logger, apis, cfg, NewMetrics())
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
	}
	ts.addListener("PLAINTEXT", ln)
	ts.addr = ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	ts.cancel = cancel
	go func() {
		defer close(ts.done)
		ts.Serve(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		// No node expires the tests' parked requests at shutdown: give up
		// on them as a node does after its drain timeout.
		ts.Abandon()
		select {
		case <-ts.done:
		case <-time.After(20 * time.Second):
			t.Error("server did not stop within 20s")
		}
	})
	return ts
}

// metricValue reads a counter or gauge.
func metricValue(t testing.TB, m prometheus.Metric) float64 {
	t.Helper()
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		t.Fatal(err)
	}
	switch {
	case d.Counter != nil:
		return d.Counter.GetValue()
	case d.Gauge != nil:
		return d.Gauge.GetValue()
	}
	t.Fatalf("metric %v is neither counter nor gauge", m.Desc())
	return 0
}
