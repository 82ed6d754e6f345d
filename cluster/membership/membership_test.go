package membership

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/testutil"
)

// crash stops this node's gossip without a leave, as if its network died.
// Run's later shutdown then skips Leave.
func (m *Membership) crash() {
	m.shutMu.Lock()
	defer m.shutMu.Unlock()
	m.mu.Lock()
	m.mu.crashed = true
	list := m.mu.list
	m.mu.Unlock()
	if list != nil {
		_ = list.Shutdown()
	}
}

// testLogger discards unless the test runs with -v. It writes to stderr,
// not t.Log: memberlist goroutines may log after the test has finished.
func testLogger() *slog.Logger {
	var w io.Writer = io.Discard
	if testing.Verbose() {
		w = os.Stderr
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

func testConfig(id int32, bind string, seeds ...string) Config {
	return Config{
		NodeID:            id,
		BindAddr:          bind,
		Seeds:             seeds,
		Logger:            testLogger(),
		ProbeInterval:     100 * time.Millisecond,
		ProbeTimeout:      50 * time.Millisecond,
		GossipInterval:    20 * time.Millisecond,
		SuspicionMult:     2,
		JoinRetryInterval: 100 * time.Millisecond,
	}
}

// testNode is a running Membership with its events recorded.
type testNode struct {
	m      *Membership
	cancel context.CancelFunc
	done   chan error // Run's result
	closed chan struct{}

	mu     sync.Mutex
	latest map[int32]bool // last event per node
}

func start(t *testing.T, cfg Config) *testNode {
	t.Helper()
	return startWith(t, cfg, nil)
}

// startWith is start with prep applied to the Membership before Run.
func startWith(t *testing.T, cfg Config, prep func(*Membership)) *testNode {
	t.Helper()
	m, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if prep != nil {
		prep(m)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &testNode{m: m, cancel: cancel, done: make(chan error, 1), closed: make(chan struct{}), latest: map[int32]bool{}}
	go func() { n.done <- m.Run(ctx) }()
	go func() {
		defer close(n.closed)
		for ev := range m.Events() {
			n.mu.Lock()
			n.latest[ev.NodeID] = ev.Alive
			n.mu.Unlock()
		}
	}()
	t.Cleanup(func() { n.stop(t) })
	return n
}

// stop cancels Run and waits (bounded) for it and the event channel.
func (n *testNode) stop(t *testing.T) {
	t.Helper()
	n.cancel()
	select {
	case err := <-n.done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
		n.done <- err // keep it for a second stop
	case <-time.After(20 * time.Second):
		t.Fatalf("node %d: Run did not return", n.m.cfg.NodeID)
	}
	select {
	case <-n.closed:
	case <-time.After(5 * time.Second):
		t.Fatalf("node %d: Events not closed", n.m.cfg.NodeID)
	}
}

func (n *testNode) lastEvent(id int32) (alive, seen bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	alive, seen = n.latest[id]
	return alive, seen
}

// addr waits for the memberlist to exist and returns its host:port.
func (n *testNode) addr(t *testing.T) string {
	t.Helper()
	var a string
	testutil.Eventually(t, 5*time.Second, func() bool {
		n.m.mu.Lock()
		defer n.m.mu.Unlock()
		if n.m.mu.list == nil {
			return false
		}
		a = net.JoinHostPort("127.0.0.1", strconv.Itoa(int(n.m.mu.list.LocalNode().Port)))
		return true
	}, "memberlist created")
	return a
}

// waitView waits until n sees exactly ids alive, both in Alive() and in
// the last event it received for each id in all.
func waitView(t *testing.T, n *testNode, timeout time.Duration, all []int32, ids ...int32) {
	t.Helper()
	testutil.Eventually(t, timeout, func() bool {
		if !slices.Equal(n.m.Alive(), ids) {
			return false
		}
		for _, id := range all {
			// Every id in all has joined at some point, so it must have
			// had an event, and the last one must match.
			alive, seen := n.lastEvent(id)
			if !seen || alive != slices.Contains(ids, id) {
				return false
			}
		}
		return true
	}, "node %d to see %v alive", n.m.cfg.NodeID, ids)
}

// startThree starts node 1 on a free port and nodes 2 and 3 seeded with it.
func startThree(t *testing.T) []*testNode {
	n1 := start(t, testConfig(1, "127.0.0.1:0"))
	seed := n1.addr(t)
	n2 := start(t, testConfig(2, "127.0.0.1:0", seed))
	n3 := start(t, testConfig(3, "127.0.0.1:0", seed))
	nodes := []*testNode{n1, n2, n3}
	for _, n := range nodes {
		waitView(t, n, 10*time.Second, []int32{1, 2, 3}, 1, 2, 3)
	}
	return nodes
}

func TestConvergeAndGracefulLeave(t *testing.T) {
	nodes := startThree(t)
	n3 := nodes[2]
	n3.stop(t)
	if got := n3.m.Alive(); len(got) != 0 {
		t.Errorf("stopped node Alive() = %v, want empty", got)
	}
	for _, n := range nodes[:2] {
		// A graceful leave is seen at gossip speed, well before the
		// suspicion timeout.
		waitView(t, n, 5*time.Second, []int32{1, 2, 3}, 1, 2)
	}
}

func TestCrashDetectedAndRestart(t *testing.T) {
	for _, sameAddr := range []bool{true, false} {
		t.Run(fmt.Sprintf("sameAddr=%v", sameAddr), func(t *testing.T) {
			nodes := startThree(t)
			n1, n2, n3 := nodes[0], nodes[1], nodes[2]
			seed := n1.addr(t)
			oldAddr := n3.addr(t)

			n3.m.crash()
			for _, n := range []*testNode{n1, n2} {
				// suspicion timeout is at most 6 * SuspicionMult *
				// ProbeInterval = 1.2s here, plus probe rounds.
				waitView(t, n, 10*time.Second, []int32{1, 2, 3}, 1, 2)
			}
			n3.stop(t)

			bind := "127.0.0.1:0"
			if sameAddr {
				bind = oldAddr
			}
			r3 := start(t, testConfig(3, bind, seed))
			for _, n := range []*testNode{n1, n2, r3} {
				waitView(t, n, 15*time.Second, []int32{1, 2, 3}, 1, 2, 3)
			}
		})
	}
}

func TestSeedStartsLast(t *testing.T) {
	// The seed's port must refuse connections while nodes 2 and 3 retry
	// it, so it is not held until node 1 starts: another process may
	// take it meanwhile (testutil.Ports), which would fail this test.
	ports := testutil.MustReservePorts(t, 1)
	ports.MustRelease(t)
	seed := ports.Addr(0)
	// Every node lists the same seed, the seed node included.
	n3 := start(t, testConfig(3, "127.0.0.1:0", seed))
	n2 := start(t, testConfig(2, "127.0.0.1:0", seed))
	// Each is alone, retrying the seed.
	waitView(t, n3, 5*time.Second, []int32{3}, 3)
	waitView(t, n2, 5*time.Second, []int32{2}, 2)
	n1 := start(t, testConfig(1, seed, seed))
	for _, n := range []*testNode{n1, n2, n3} {
		waitView(t, n, 10*time.Second, []int32{1, 2, 3}, 1, 2, 3)
	}
}

func TestRunTwiceAndSingleNode(t *testing.T) {
	n := start(t, testConfig(7, "127.0.0.1:0"))
	waitView(t, n, 5*time.Second, []int32{7}, 7)
	if err := n.m.Run(context.Background()); !errors.Is(err, ErrAlreadyRun) {
		t.Fatalf("second Run = %v, want ErrAlreadyRun", err)
	}
	n.stop(t)
}

func TestNewValidates(t *testing.T) {
	base := testConfig(1, "127.0.0.1:0")
	for name, mut := range map[string]func(*Config){
		"NodeID":        func(c *Config) { c.NodeID = -1 },
		"BindAddr":      func(c *Config) { c.BindAddr = "nope" },
		"Seeds":         func(c *Config) { c.Seeds = []string{"host-without-port"} },
		"ProbeTimeout":  func(c *Config) { c.ProbeTimeout = c.ProbeInterval },
		"SuspicionMult": func(c *Config) { c.SuspicionMult = -1 },
	} {
		cfg := base
		mut(&cfg)
		if _, err := New(cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: New = %v, want ErrInvalidConfig", name, err)
		}
	}
	if _, err := New(Config{NodeID: 0, BindAddr: ":7946"}); err != nil {
		t.Errorf("LAN defaults: %v", err)
	}
}

type captureHandler struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (h *captureHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *captureHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, r)
	return nil
}
func (h *captureHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *captureHandler) WithGroup(string) slog.Handler      { return h }

func TestSlogWriterLevels(t *testing.T) {
	h := &captureHandler{}
	w := slogWriter{slog.New(h)}
	for _, line := range []string{
		"[DEBUG] memberlist: Stream connection from=127.0.0.1:1\n",
		"[INFO] memberlist: Suspect kbroker-3 has failed\n",
		"[WARN] memberlist: Was able to connect to kbroker-2 over TCP\n",
		"[ERR] memberlist: Failed to send ping\n",
		"no level at all\n",
	} {
		if n, err := w.Write([]byte(line)); n != len(line) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	want := []struct {
		level slog.Level
		msg   string
	}{
		{slog.LevelInfo, "Suspect kbroker-3 has failed"},
		{slog.LevelWarn, "Was able to connect to kbroker-2 over TCP"},
		{slog.LevelError, "Failed to send ping"},
		{slog.LevelInfo, "no level at all"},
	}
	if len(h.recs) != len(want) {
		t.Fatalf("got %d records, want %d", len(h.recs), len(want))
	}
	for i, w := range want {
		if h.recs[i].Level != w.level || h.recs[i].Message != w.msg {
			t.Errorf("record %d = %v %q, want %v %q", i, h.recs[i].Level, h.recs[i].Message, w.level, w.msg)
		}
	}
}
