package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kbroker/kbroker/internal/clustercheck"
	"github.com/kbroker/kbroker/internal/testutil"
)

// procTarget is three kbroker subprocesses on 127.0.0.1, each broker and
// controller, with OS-chosen ports that stay the same across restarts.
type procTarget struct {
	bin    string
	dir    string
	secure *procSecurity   // nil: PLAINTEXT everywhere
	sec    []kgo.Opt       // the clients' TLS and SASL options
	ports  *testutil.Ports // reserved until start
	nodes  []*procNode
	ctx    context.Context
	issues []string // the target's own, beside each node's
	// diskFull: every node gets a tmpfs of its own (the disk-full
	// nemesis, diskfull.go); diskErr says why it could not.
	diskFull bool
	diskErr  string
}

type procNode struct {
	id      int32
	dataDir string
	logPath string
	addr    string
	args    []string

	mu         sync.Mutex
	cmd        *exec.Cmd
	done       chan struct{}
	waitErr    error
	expectExit bool
	paused     bool
	starts     int
	logFile    *os.File
	issues     []string
	mounted    bool // its data dir is a tmpfs of its own
	// clockFile holds the node's wall clock offset (clock-jump nemesis,
	// clockjump.go), outside its data dir so a full disk cannot refuse it.
	clockFile string
}

// timing makes failure detection quick, as the brief asks.
var procTiming = []string{
	"broker.session.timeout.ms=3000",
	"broker.heartbeat.interval.ms=500",
	"leader.imbalance.check.interval.seconds=5",
	"replica.lag.time.max.ms=5000",
	"default.replication.factor=3",
	"min.insync.replicas=2",
}

// sessionTimeout is broker.session.timeout.ms above.
const sessionTimeout = 3 * time.Second

// moduleRoot is the directory of this module's go.mod.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("not inside a Go module; pass --kbroker")
	}
	return filepath.Dir(gomod), nil
}

func newProcTarget(bin, dir, security string) (*procTarget, error) {
	if bin == "" {
		bin = os.Getenv("CHAOS_KBROKER")
	}
	if bin == "" {
		root, err := moduleRoot()
		if err != nil {
			return nil, err
		}
		bin = filepath.Join(dir, "kbroker")
		build := exec.Command("go", "build", "-o", bin, "./cmd/kbroker")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("building kbroker: %w\n%s", err, out)
		}
	}
	t := &procTarget{bin: bin, dir: dir}
	if security == secSASLSSL {
		s, err := newProcSecurity(bin, dir)
		if err != nil {
			return nil, err
		}
		t.secure, t.sec = s, s.opts
	}
	return t, nil
}

// configure gives the three nodes fresh ports (client, controller, gossip
// each, and the inter-broker listener's when secure), reserved until start
// launches them.
func (t *procTarget) configure() error {
	per := 3
	if t.secure != nil {
		per = 4
	}
	ports, err := testutil.ReservePorts(3 * per)
	if err != nil {
		return err
	}
	t.ports = ports
	var voters, gossip []string
	for i := range 3 {
		voters = append(voters, fmt.Sprintf("%d@%s", i+1, ports.Addr(per*i+1)))
		gossip = append(gossip, ports.Addr(per*i+2))
	}
	t.nodes = nil
	for i := range 3 {
		n := &procNode{
			id:      int32(i + 1),
			dataDir: filepath.Join(t.dir, fmt.Sprintf("node-%d", i+1)),
			logPath: filepath.Join(t.dir, fmt.Sprintf("node-%d.log", i+1)),
			addr:    ports.Addr(per * i),
		}
		ctrl := ports.Addr(per*i + 1)
		n.clockFile = filepath.Join(t.dir, fmt.Sprintf("node-%d.clock", i+1))
		n.args = []string{"serve", "--set", fmt.Sprintf("node.id=%d", i+1), "--fault-clock-file", n.clockFile}
		if t.secure != nil {
			props, err := t.secure.nodeProps(t.dir, i+1, n.addr, ports.Addr(per*i+3), ctrl)
			if err != nil {
				return err
			}
			n.args = append(n.args, "--config", props, "--add-scram-file", t.secure.scramFile)
		} else {
			n.args = append(n.args,
				"--set", fmt.Sprintf("listeners=PLAINTEXT://%s,CONTROLLER://%s", n.addr, ctrl),
				"--set", "advertised.listeners=PLAINTEXT://"+n.addr)
		}
		n.args = append(n.args,
			"--set", "controller.quorum.voters="+strings.Join(voters, ","),
			"--set", "log.dirs="+n.dataDir,
			"--set", "gossip.listener="+gossip[i],
			"--set", "gossip.seeds="+strings.Join(gossip, ","),
		)
		for _, s := range procTiming {
			n.args = append(n.args, "--set", s)
		}
		t.nodes = append(t.nodes, n)
	}
	return nil
}

func (t *procTarget) name() string {
	if t.secure != nil {
		return "subprocess (SASL_SSL)"
	}
	return "subprocess"
}

func (t *procTarget) security() []kgo.Opt { return t.sec }

func (t *procTarget) ids() []int32 { return []int32{1, 2, 3} }

func (t *procTarget) node(id int32) *procNode { return t.nodes[id-1] }

func (t *procTarget) addr(id int32) string { return t.node(id).addr }

func (t *procTarget) seeds() []string {
	var s []string
	for _, n := range t.nodes {
		s = append(s, n.addr)
	}
	return s
}

// start launches the three nodes on freshly reserved ports. The ports are
// free between their release and each node binding them (see
// testutil.Ports); when a node lost that race, the whole cluster starts
// again on new ports, with fresh data directories.
func (t *procTarget) start(ctx context.Context) error {
	t.ctx = ctx
	var err error
	for attempt := 1; attempt <= 3; attempt++ {
		if err = t.configure(); err != nil {
			return err
		}
		if t.diskFull {
			t.mountDisks()
		}
		var inUse bool
		if inUse, err = t.startOnce(ctx); err == nil || !inUse {
			return err
		}
		t.close()
		t.unmountDisks()
		for _, n := range t.nodes {
			_ = os.RemoveAll(n.dataDir)
			_ = os.Rename(n.logPath, fmt.Sprintf("%s.attempt-%d", n.logPath, attempt))
		}
	}
	return err
}

// startOnce launches every node and waits until each answers; inUse
// reports a node that could not bind its address.
func (t *procTarget) startOnce(ctx context.Context) (inUse bool, err error) {
	if err := t.ports.Release(); err != nil {
		// A port still held would fail its node's bind: retry on fresh ones.
		return true, err
	}
	for _, n := range t.nodes {
		if err := n.launch(t.bin); err != nil {
			return false, err
		}
	}
	// The quorum forms once a majority runs: wait after launching all.
	for _, n := range t.nodes {
		if err := waitReady(ctx, n.addr, t.sec, n.exited); err != nil {
			log := tail(n.logPath, 30)
			return testutil.AddrInUse(err, log), fmt.Errorf("node %d: %w; log tail:\n%s", n.id, err, log)
		}
	}
	return false, nil
}

func (n *procNode) launch(bin string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil && !isClosed(n.done) {
		return fmt.Errorf("node %d: start while running", n.id)
	}
	if n.logFile == nil {
		f, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		n.logFile = f
	}
	n.starts++
	fmt.Fprintf(n.logFile, "=== chaos: start %d at %s\n", n.starts, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(bin, n.args...)
	cmd.Stdout, cmd.Stderr = n.logFile, n.logFile
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("node %d: %w", n.id, err)
	}
	n.cmd, n.done, n.expectExit, n.paused = cmd, make(chan struct{}), false, false
	done := n.done
	go func() {
		err := cmd.Wait()
		n.mu.Lock()
		n.waitErr = err
		if !n.expectExit {
			n.issues = append(n.issues, fmt.Sprintf("node %d exited on its own at %s: %v", n.id, time.Now().Format("15:04:05.000"), err))
		}
		n.mu.Unlock()
		close(done)
	}()
	return nil
}

func isClosed(c chan struct{}) bool {
	if c == nil {
		return true
	}
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func (n *procNode) exited() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return isClosed(n.done)
}

func (t *procTarget) running(id int32) bool {
	n := t.node(id)
	n.mu.Lock()
	defer n.mu.Unlock()
	return !isClosed(n.done) && !n.paused
}

// signalAndWait sends sig and waits up to timeout for the exit, then
// SIGKILLs. It reports whether the process exited in time and its error.
func (n *procNode) signalAndWait(sig syscall.Signal, timeout time.Duration) (bool, error) {
	n.mu.Lock()
	if isClosed(n.done) {
		n.mu.Unlock()
		return true, nil
	}
	n.expectExit = true
	cmd, done := n.cmd, n.done
	_ = cmd.Process.Signal(sig)
	if n.paused {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		n.paused = false
	}
	n.mu.Unlock()
	select {
	case <-done:
		n.mu.Lock()
		defer n.mu.Unlock()
		return true, n.waitErr
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		<-done
		return false, nil
	}
}

func (n *procNode) note(format string, args ...any) {
	n.mu.Lock()
	n.issues = append(n.issues, fmt.Sprintf(format, args...))
	n.mu.Unlock()
}

func (t *procTarget) kill(id int32) error {
	if ok, _ := t.node(id).signalAndWait(syscall.SIGKILL, killTimeout); !ok {
		return fmt.Errorf("node %d did not die within %v of SIGKILL", id, killTimeout)
	}
	return nil
}

func (t *procTarget) term(id int32) error {
	n := t.node(id)
	ok, err := n.signalAndWait(syscall.SIGTERM, stopTimeout)
	if !ok {
		n.note("node %d did not exit within %v of SIGTERM (killed)", id, stopTimeout)
		return fmt.Errorf("node %d did not exit within %v of SIGTERM", id, stopTimeout)
	}
	if err != nil {
		n.note("node %d exited badly after SIGTERM: %v", id, err)
	}
	return nil
}

func (t *procTarget) restart(id int32) error {
	n := t.node(id)
	if err := n.launch(t.bin); err != nil {
		return err
	}
	return waitReady(t.ctx, n.addr, t.sec, n.exited)
}

func (t *procTarget) sig(id int32, s syscall.Signal, paused bool) error {
	n := t.node(id)
	n.mu.Lock()
	defer n.mu.Unlock()
	if isClosed(n.done) {
		return fmt.Errorf("node %d is not running", id)
	}
	n.paused = paused
	return n.cmd.Process.Signal(s)
}

func (t *procTarget) pause(id int32) error  { return t.sig(id, syscall.SIGSTOP, true) }
func (t *procTarget) resume(id int32) error { return t.sig(id, syscall.SIGCONT, false) }

func (t *procTarget) sessionTimeout() time.Duration { return sessionTimeout }

func (t *procTarget) isolateSupport() string {
	return "subprocesses share the loopback interface: no clean per-process network isolation without root (skipped)"
}

func (t *procTarget) isolate(int32) error {
	return fmt.Errorf("isolate: not supported for subprocesses")
}
func (t *procTarget) reconnect(int32) error { return nil }

func (t *procTarget) heal() error {
	var errs []string
	for _, n := range t.nodes {
		if n.mounted {
			if err := t.freeDisk(n.id); err != nil {
				errs = append(errs, err.Error())
			}
		}
	}
	for _, n := range t.nodes {
		n.mu.Lock()
		alive := !isClosed(n.done)
		if alive && n.paused {
			_ = n.cmd.Process.Signal(syscall.SIGCONT)
			n.paused = false
		}
		n.mu.Unlock()
		if !alive {
			// Launch every dead node before waiting for any: a node
			// answers only once a quorum runs.
			if err := n.launch(t.bin); err != nil {
				errs = append(errs, err.Error())
			}
		}
	}
	for _, n := range t.nodes {
		if err := waitReady(t.ctx, n.addr, t.sec, n.exited); err != nil {
			errs = append(errs, fmt.Sprintf("node %d: %v", n.id, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("heal: %s", strings.Join(errs, "; "))
	}
	return nil
}

func (t *procTarget) replicaLogs(topic string, p int32, hw int64) (map[int32][]byte, string, error) {
	dirs := map[int32]string{}
	for _, n := range t.nodes {
		dirs[n.id] = n.dataDir
	}
	logs, err := clustercheck.ReplicaLogs(dirs, topic, p, hw)
	return logs, "", err
}

func (t *procTarget) problems() []string {
	out := append([]string(nil), t.issues...)
	for _, n := range t.nodes {
		n.mu.Lock()
		out = append(out, n.issues...)
		n.mu.Unlock()
		out = append(out, scanLog(n.logPath, fmt.Sprintf("node %d", n.id))...)
	}
	return out
}

// scanLog returns the lines of a broker log that mention a panic or a Go
// runtime fatal error (at most 5).
func scanLog(path, who string) []string {
	f, err := os.Open(path)
	if err != nil {
		return []string{fmt.Sprintf("%s: cannot read log: %v", who, err)}
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		l := strings.ToLower(sc.Text())
		if strings.Contains(l, "panic") || strings.HasPrefix(l, "fatal error:") {
			if len(out) < 5 {
				out = append(out, fmt.Sprintf("%s log: %s", who, truncate(sc.Text(), 200)))
			}
		}
	}
	return out
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (t *procTarget) close() {
	if t.ports != nil {
		if err := t.ports.Release(); err != nil {
			t.issues = append(t.issues, err.Error())
		}
	}
	var wg sync.WaitGroup
	for _, n := range t.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if ok, err := n.signalAndWait(syscall.SIGTERM, stopTimeout); !ok {
				n.note("node %d did not exit within %v of the final SIGTERM", n.id, stopTimeout)
			} else if err != nil {
				n.note("node %d exited badly after the final SIGTERM: %v", n.id, err)
			}
		}()
	}
	wg.Wait()
	for _, n := range t.nodes {
		n.mu.Lock()
		if n.logFile != nil {
			n.logFile.Close()
			n.logFile = nil
		}
		n.mu.Unlock()
	}
	// The nodes' tmpfs disks (the disk-full nemesis) go with them.
	t.unmountDisks()
}
