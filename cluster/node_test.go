package cluster

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/kbroker/kbroker/config"
)

// testNode is a single-node broker+controller running in this process on
// OS-chosen ports.
type testNode struct {
	*Node
	dir    string
	addr   string
	cancel context.CancelFunc
	done   chan error
}

// freePort asks the OS for a port that is free right now. Raft needs its
// address before it binds, so the controller listener cannot use port 0.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("KB_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// startNode starts a node with its data in dir (a fresh temp dir when
// empty) and extra config sets.
func startNode(t testing.TB, dir string, sets ...string) *testNode {
	t.Helper()
	return startNodeWith(t, dir, nil, sets...)
}

// startNodeWith is startNode with setup run on the node before it starts
// (to install a test authorizer or API row).
func startNodeWith(t testing.TB, dir string, setup func(*Node), sets ...string) *testNode {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	ctrl := strconv.Itoa(freePort(t))
	base := []string{
		"node.id=1",
		"listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:" + ctrl,
		"controller.quorum.voters=1@127.0.0.1:" + ctrl,
		"log.dirs=" + dir,
	}
	cfg, err := config.Load("", nil, append(base, sets...))
	if err != nil {
		t.Fatal(err)
	}
	n, err := NewNode(cfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tn := &testNode{Node: n, dir: dir, cancel: cancel, done: make(chan error, 1)}
	go func() { tn.done <- n.Run(ctx) }()
	select {
	case <-n.Ready():
	case err := <-tn.done:
		t.Fatalf("node exited before ready: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("node not ready after 30s")
	}
	addr, ok := n.Addr("PLAINTEXT")
	if !ok {
		t.Fatal("no PLAINTEXT listener")
	}
	tn.addr = addr
	t.Cleanup(func() { tn.stop(t) })
	return tn
}

// stop shuts the node down cleanly and waits for it. Safe to call twice.
func (tn *testNode) stop(t testing.TB) {
	t.Helper()
	if tn.cancel == nil {
		return
	}
	tn.cancel()
	tn.cancel = nil
	select {
	case err := <-tn.done:
		if err != nil {
			t.Errorf("node shutdown: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("node did not stop within 30s")
	}
}

// waitFor polls cond until it holds or timeout passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
