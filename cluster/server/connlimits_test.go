package server

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/kafkatest"
	"github.com/kbroker/kbroker/internal/testutil"
)

// Connections over max.connections or max.connections.per.ip (or its
// override) are accepted and closed at once and counted; a slot freed by a
// closing connection is usable again.
func TestConnectionLimits(t *testing.T) {
	for _, tc := range []struct {
		name       string
		max, perIP int32
		overrides  map[string]int32
		allowed    int
		reason     string
	}{
		{name: "max.connections", max: 2, perIP: 100, allowed: 2, reason: "broker"},
		{name: "max.connections.per.ip", max: 100, perIP: 2, allowed: 2, reason: "ip"},
		{name: "override raises the per-ip limit", max: 100, perIP: 1, overrides: map[string]int32{"127.0.0.1": 3}, allowed: 3, reason: "ip"},
		{name: "override to zero", max: 100, perIP: 5, overrides: map[string]int32{"localhost": 0}, allowed: 0, reason: "ip"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testServerConfig()
			cfg.maxConnections, cfg.maxConnectionsPerIP, cfg.perIPOverrides = tc.max, tc.perIP, tc.overrides
			ts := startServer(t, cfg, nil)
			var open []*kafkatest.Conn
			for range tc.allowed {
				c := kafkatest.Dial(t, ts.addr)
				kafkatest.APIVersionsOK(t, c)
				open = append(open, c)
			}
			over := kafkatest.Dial(t, ts.addr)
			over.ExpectClosed()
			if got := metricValue(t, ts.metrics.rejected.WithLabelValues("PLAINTEXT", tc.reason)); got != 1 {
				t.Errorf("rejected{reason=%s} = %v, want 1", tc.reason, got)
			}
			if len(open) == 0 {
				return
			}
			open[0].NC.Close()
			testutil.Eventually(t, 5*time.Second, func() bool { return ts.limits.open() == tc.allowed-1 }, "the closed connection to be released")
			kafkatest.APIVersionsOK(t, kafkatest.Dial(t, ts.addr))
		})
	}
}

// A connection that sends nothing for connections.max.idle.ms is closed,
// but not while a request of it is parked.
func TestIdleConnectionClosed(t *testing.T) {
	cfg := testServerConfig()
	cfg.idleTimeout = 200 * time.Millisecond
	ts := startServer(t, cfg, nil, parkingAPI(nil, true))
	idle := kafkatest.Dial(t, ts.addr)
	kafkatest.APIVersionsOK(t, idle)
	start := time.Now()
	idle.ExpectClosed()
	t.Logf("idle connection closed after %v", time.Since(start))
	if got := metricValue(t, ts.metrics.closedIdle); got != 1 {
		t.Errorf("closed idle = %v, want 1", got)
	}

	// A parked produce waiting 4 idle periods keeps its connection.
	busy := kafkatest.Dial(t, ts.addr)
	req := kafkatest.ProduceRequest(9, -1, "t", map[int32][]byte{0: nil})
	req.TimeoutMillis = 800
	resp := busy.RoundTrip(req)
	if resp == nil {
		t.Fatal("no response")
	}
	busy.ExpectClosed() // and idle again afterwards
}

// A request whose bytes started arriving must be complete within the
// frame read timeout: a client trickling a frame is closed.
func TestSlowFrameClosed(t *testing.T) {
	cfg := testServerConfig()
	cfg.frameReadTimeout = 200 * time.Millisecond
	ts := startServer(t, cfg, nil)
	for _, tc := range []struct {
		name string
		sent []byte
	}{
		{"inside the size", []byte{0, 0}},
		{"inside the body", binary.BigEndian.AppendUint32(nil, 100)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := kafkatest.Dial(t, ts.addr)
			if _, err := c.NC.Write(tc.sent); err != nil {
				t.Fatal(err)
			}
			c.ExpectClosed()
		})
	}
}
