package bench

// The local three-node kbroker cluster that "kbroker bench" measures: this
// same binary started three times as "kbroker serve" on 127.0.0.1, each
// node broker and controller, with OS-chosen ports that stay the same
// across restarts so a killed node comes back at its old address.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

type benchNode struct {
	id        int32
	addr      string // client listener
	adminAddr string // admin.listener (/readyz, /debug/pprof)
	dataDir   string
	logPath   string
	args      []string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

type benchCluster struct {
	bin   string
	nodes []*benchNode
}

// newBenchCluster lays out three nodes under dir; extra are further
// "key=value" settings given to every node; pprof turns on their
// profiling endpoints (a build without admin.pprof.enable refuses it).
func newBenchCluster(bin, dir string, extra []string, pprof bool) (*benchCluster, error) {
	ports, err := freeTCPPorts(12)
	if err != nil {
		return nil, err
	}
	var voters, gossip []string
	for i := range 3 {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, ports[4*i+1]))
		gossip = append(gossip, fmt.Sprintf("127.0.0.1:%d", ports[4*i+2]))
	}
	c := &benchCluster{bin: bin}
	for i := range 3 {
		n := &benchNode{
			id:        int32(i + 1),
			addr:      fmt.Sprintf("127.0.0.1:%d", ports[4*i]),
			adminAddr: fmt.Sprintf("127.0.0.1:%d", ports[4*i+3]),
			dataDir:   filepath.Join(dir, fmt.Sprintf("node-%d", i+1)),
			logPath:   filepath.Join(dir, fmt.Sprintf("node-%d.log", i+1)),
		}
		sets := []string{
			fmt.Sprintf("node.id=%d", i+1),
			fmt.Sprintf("listeners=PLAINTEXT://%s,CONTROLLER://127.0.0.1:%d", n.addr, ports[4*i+1]),
			"advertised.listeners=PLAINTEXT://" + n.addr,
			"controller.quorum.voters=" + strings.Join(voters, ","),
			"log.dirs=" + n.dataDir,
			"gossip.listener=" + gossip[i],
			"gossip.seeds=" + strings.Join(gossip, ","),
			"admin.listener=" + n.adminAddr,
			"default.replication.factor=3",
			"min.insync.replicas=2",
		}
		if pprof {
			sets = append(sets, "admin.pprof.enable=true")
		}
		sets = append(sets, extra...)
		n.args = []string{"serve"}
		for _, s := range sets {
			n.args = append(n.args, "--set", s)
		}
		c.nodes = append(c.nodes, n)
	}
	return c, nil
}

func freeTCPPorts(n int) ([]int, error) {
	var out []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("choosing a port: %w", err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

func (c *benchCluster) seeds() []string {
	var s []string
	for _, n := range c.nodes {
		s = append(s, n.addr)
	}
	return s
}

// start starts every node and waits until each reports ready.
func (c *benchCluster) start(ctx context.Context) error {
	for _, n := range c.nodes {
		if err := n.start(c.bin); err != nil {
			return err
		}
	}
	for _, n := range c.nodes {
		if err := n.waitReady(ctx); err != nil {
			return err
		}
	}
	return nil
}

// stop sends SIGTERM to every running node and waits for it (SIGKILL
// after 20 s).
func (c *benchCluster) stop() {
	var wg sync.WaitGroup
	for _, n := range c.nodes {
		wg.Go(func() { n.terminate(20 * time.Second) })
	}
	wg.Wait()
}

func (n *benchNode) start(bin string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := os.MkdirAll(n.dataDir, 0o755); err != nil {
		return err
	}
	logf, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, n.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("starting node %d: %w", n.id, err)
	}
	done := make(chan struct{})
	go func() { // owned by the process: ends when it exits
		_ = cmd.Wait() // a node's exit status is the signal the bench sent
		logf.Close()
		close(done)
	}()
	n.cmd, n.done = cmd, done
	return nil
}

// running reports whether the node's process is alive.
func (n *benchNode) running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return false
	}
	select {
	case <-n.done:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (n *benchNode) kill() {
	n.signalAndWait(syscall.SIGKILL, time.Minute)
}

// terminate sends SIGTERM (a controlled shutdown) and waits up to grace,
// then kills.
func (n *benchNode) terminate(grace time.Duration) {
	if !n.signalAndWait(syscall.SIGTERM, grace) {
		n.kill()
	}
}

func (n *benchNode) signalAndWait(sig syscall.Signal, wait time.Duration) bool {
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.mu.Unlock()
	if cmd == nil {
		return true
	}
	if err := cmd.Process.Signal(sig); err != nil {
		// Already exited: done is closed or about to be.
		return waitClosed(done, wait)
	}
	select {
	case <-done:
		return true
	case <-time.After(wait):
		return false
	}
}

// waitReady polls the node's /readyz until it answers 200.
func (n *benchNode) waitReady(ctx context.Context) error {
	return n.waitReadyWithin(ctx, 60*time.Second)
}

// waitReadyWithin is waitReady with a deadline of its own (a node with
// many partitions takes longer to start).
func (n *benchNode) waitReadyWithin(ctx context.Context, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	hc := &http.Client{Timeout: time.Second}
	for {
		if !n.running() {
			return fmt.Errorf("node %d exited while starting; see %s", n.id, n.logPath)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.adminAddr+"/readyz", nil)
		if resp, err := hc.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body) // drain for reuse; the status decides
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %d not ready: %w", n.id, errors.Join(ctx.Err(), errors.New("see "+n.logPath)))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitClosed reports whether done closes within wait.
func waitClosed(done <-chan struct{}, wait time.Duration) bool {
	select {
	case <-done:
		return true
	case <-time.After(wait):
		return false
	}
}
