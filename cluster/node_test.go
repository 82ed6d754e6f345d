package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/internal/testutil"
	dto "github.com/prometheus/client_model/go"
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

func testLogger(t testing.TB) *slog.Logger { return testutil.Logger(t) }

// startNode starts a node with its data in dir (a fresh temp dir when
// empty) and extra config sets.
//
// The client listener uses port 0. Raft needs the controller address
// before it binds (it is in controller.quorum.voters), so that port is
// reserved and released just before the start; a start that lost it to
// another process in between is retried on a new port.
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
	for attempt := 1; ; attempt++ {
		tn, err := tryStartNode(t, dir, setup, sets)
		if err == nil {
			t.Cleanup(func() { tn.stop(t) })
			return tn
		}
		if attempt == 3 || !testutil.AddrInUse(err, "") {
			t.Fatal(err)
		}
		t.Logf("start attempt %d lost its controller port, retrying on a new one: %v", attempt, err)
	}
}

func tryStartNode(t testing.TB, dir string, setup func(*Node), sets []string) (*testNode, error) {
	ports := testutil.MustReservePorts(t, 1)
	ctrl := ports.Addr(0)
	base := []string{
		"node.id=1",
		"listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://" + ctrl,
		"controller.quorum.voters=1@" + ctrl,
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
	ports.MustRelease(t)
	go func() { tn.done <- n.Run(ctx) }()
	select {
	case <-n.Ready():
	case err := <-tn.done:
		cancel()
		return nil, fmt.Errorf("node exited before ready: %w", err)
	case <-time.After(30 * time.Second):
		tn.stop(t)
		return nil, fmt.Errorf("node not ready after 30s")
	}
	addr, ok := n.Addr("PLAINTEXT")
	if !ok {
		t.Fatal("no PLAINTEXT listener")
	}
	tn.addr = addr
	return tn, nil
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

// startQuorum starts n broker+controller nodes (ids 1..n) forming one
// quorum, with sets applied to each and setup run on each node before it
// starts. Controller ports are reserved together and released just before
// the nodes bind them.
func startQuorum(t *testing.T, n int, setup func(*Node), sets ...string) []*testNode {
	t.Helper()
	ports := testutil.MustReservePorts(t, n)
	var voters []string
	for i := range n {
		voters = append(voters, fmt.Sprintf("%d@%s", i+1, ports.Addr(i)))
	}
	nodes := make([]*testNode, n)
	ports.MustRelease(t)
	for i := range nodes {
		cfg, err := config.Load("", nil, append([]string{
			"node.id=" + strconv.Itoa(i+1),
			"listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://" + ports.Addr(i),
			"controller.quorum.voters=" + strings.Join(voters, ","),
			"log.dirs=" + t.TempDir(),
		}, sets...))
		if err != nil {
			t.Fatal(err)
		}
		node, err := NewNode(cfg, testLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		if setup != nil {
			setup(node)
		}
		ctx, cancel := context.WithCancel(context.Background())
		tn := &testNode{Node: node, cancel: cancel, done: make(chan error, 1)}
		go func() { tn.done <- node.Run(ctx) }()
		nodes[i] = tn
		t.Cleanup(func() { tn.stop(t) })
	}
	for _, tn := range nodes {
		select {
		case <-tn.Ready():
		case err := <-tn.done:
			t.Fatalf("node exited before ready: %v", err)
		case <-time.After(30 * time.Second):
			t.Fatal("node not ready after 30s")
		}
		tn.addr, _ = tn.Addr("PLAINTEXT")
	}
	return nodes
}

// nodeMetric is the sum of the samples of the metric family name that
// n exports with the given label pairs (name, value, ...), as a scrape of
// /metrics would show them.
func nodeMetric(t testing.TB, n *Node, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := n.metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	samples:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				if !hasLabel(m.GetLabel(), labels[i], labels[i+1]) {
					continue samples
				}
			}
			total += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return total
}

func hasLabel(pairs []*dto.LabelPair, name, value string) bool {
	for _, p := range pairs {
		if p.GetName() == name && p.GetValue() == value {
			return true
		}
	}
	return false
}
