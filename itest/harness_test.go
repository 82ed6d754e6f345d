package itest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// brokerBin is the kbroker binary TestMain builds once for the package.
var brokerBin string

const (
	readyTimeout = 30 * time.Second // start until Metadata answers
	stopTimeout  = 30 * time.Second // SIGTERM until exit
	killTimeout  = 10 * time.Second // SIGKILL until the process is reaped
	logTailLines = 80
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "kbroker-itest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "itest:", err)
		return 1
	}
	defer os.RemoveAll(tmp)

	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "itest: go env GOMOD:", err)
		return 1
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		fmt.Fprintln(os.Stderr, "itest: not inside a Go module")
		return 1
	}
	brokerBin = filepath.Join(tmp, "kbroker")
	build := exec.Command("go", "build", "-o", brokerBin, "./cmd/kbroker")
	build.Dir = filepath.Dir(gomod)
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "itest: building kbroker: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// broker is one kbroker subprocess. Its ports and log directory stay the
// same across restarts, so clients reconnect to the same address.
type broker struct {
	t        testing.TB
	dir      string   // log.dirs
	args     []string // full argument list after the binary name
	addr     string   // PLAINTEXT host:port
	ctrlAddr string   // CONTROLLER host:port
	logPath  string   // stderr+stdout of every start, appended

	cmd     *exec.Cmd
	logFile *os.File
	done    chan struct{} // closed when cmd has been waited for
	waitErr error
	starts  int
}

// freePort asks the OS for a free 127.0.0.1 port.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startBroker starts a single-node broker+controller with its data in dir
// and waits until it answers Metadata. sets are extra key=value configs.
func startBroker(t testing.TB, dir string, sets ...string) *broker {
	t.Helper()
	ports := freePorts(t, 2)
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	ctrl := fmt.Sprintf("127.0.0.1:%d", ports[1])
	b := newBroker(t, 1, dir, addr, ctrl, "1@"+ctrl, sets...)
	b.start()
	return b
}

// freePorts returns n distinct free ports.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	seen := map[int]bool{}
	var out []int
	for i := 0; len(out) < n && i < 100; i++ {
		if p := freePort(t); !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	if len(out) < n {
		t.Fatalf("could not find %d free ports", n)
	}
	return out
}

// newBroker prepares (but does not start) node id with its listeners on
// addr (clients) and ctrl (Raft), the given quorum voters and data dir.
func newBroker(t testing.TB, id int, dir, addr, ctrl, voters string, sets ...string) *broker {
	t.Helper()
	b := &broker{
		t:        t,
		dir:      dir,
		addr:     addr,
		ctrlAddr: ctrl,
		logPath:  filepath.Join(t.TempDir(), "kbroker.log"),
	}
	b.args = []string{"serve",
		"--set", fmt.Sprintf("node.id=%d", id),
		"--set", fmt.Sprintf("listeners=PLAINTEXT://%s,CONTROLLER://%s", b.addr, b.ctrlAddr),
		"--set", "advertised.listeners=PLAINTEXT://" + b.addr,
		"--set", "controller.quorum.voters=" + voters,
		"--set", "log.dirs=" + dir,
	}
	if lvl := os.Getenv("KB_TEST_LOG"); lvl != "" {
		b.args = append(b.args, "--log-level", lvl)
	}
	for _, s := range sets {
		b.args = append(b.args, "--set", s)
	}
	t.Cleanup(func() {
		if b.running() {
			b.signalAndWait(syscall.SIGKILL, killTimeout)
		}
		if b.logFile != nil {
			b.logFile.Close()
		}
		if t.Failed() {
			t.Logf("kbroker %s log tail (%s):\n%s", b.addr, b.logPath, b.logTail(logTailLines))
		}
	})
	return b
}

func (b *broker) running() bool {
	if b.done == nil {
		return false
	}
	select {
	case <-b.done:
		return false
	default:
		return true
	}
}

// start launches the process and waits until it answers Metadata.
func (b *broker) start() {
	b.t.Helper()
	b.launch()
	b.waitReady()
}

// launch starts the process without waiting for it to be ready.
func (b *broker) launch() {
	b.t.Helper()
	if b.running() {
		b.t.Fatalf("broker %s: start while running", b.addr)
	}
	if b.logFile == nil {
		f, err := os.OpenFile(b.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			b.t.Fatalf("broker log: %v", err)
		}
		b.logFile = f
	}
	b.starts++
	fmt.Fprintf(b.logFile, "=== itest: start %d: %s %s\n", b.starts, brokerBin, strings.Join(b.args, " "))

	cmd := exec.Command(brokerBin, b.args...)
	cmd.Stdout, cmd.Stderr = b.logFile, b.logFile
	if err := cmd.Start(); err != nil {
		b.t.Fatalf("starting kbroker: %v", err)
	}
	b.cmd = cmd
	b.done = make(chan struct{})
	done := b.done
	go func() {
		err := cmd.Wait()
		b.waitErr = err // read only after <-done
		close(done)
	}()
}

// waitReady polls Metadata with a franz-go client, for at most readyTimeout.
func (b *broker) waitReady() {
	b.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.DialTimeout(time.Second),
		kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
	if err != nil {
		b.t.Fatalf("client: %v", err)
	}
	defer cl.Close()

	deadline := time.Now().Add(readyTimeout)
	var lastErr error
	for attempt := 0; attempt < 300 && time.Now().Before(deadline); attempt++ {
		select {
		case <-b.done:
			b.t.Fatalf("kbroker exited during start (%v); log tail:\n%s", b.waitErr, b.logTail(logTailLines))
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		req := kmsg.NewPtrMetadataRequest()
		resp, err := req.RequestWith(ctx, cl)
		cancel()
		if err == nil && len(resp.Brokers) > 0 {
			return
		}
		if err == nil {
			err = errors.New("metadata lists no brokers")
		}
		lastErr = err
		select {
		case <-b.done:
		case <-time.After(100 * time.Millisecond):
		}
	}
	b.t.Fatalf("kbroker %s not ready after %v: %v; log tail:\n%s", b.addr, readyTimeout, lastErr, b.logTail(logTailLines))
}

// signalAndWait sends sig and waits up to timeout for the exit; it kills
// the process if it is still there then. It returns the Wait error.
func (b *broker) signalAndWait(sig syscall.Signal, timeout time.Duration) (error, bool) {
	if !b.running() {
		return b.waitErr, true
	}
	_ = b.cmd.Process.Signal(sig)
	select {
	case <-b.done:
		return b.waitErr, true
	case <-time.After(timeout):
		_ = b.cmd.Process.Kill()
		<-b.done
		return b.waitErr, false
	}
}

// kill9 SIGKILLs the broker and waits for it.
func (b *broker) kill9() {
	b.t.Helper()
	if _, ok := b.signalAndWait(syscall.SIGKILL, killTimeout); !ok {
		b.t.Fatalf("kbroker did not die within %v of SIGKILL", killTimeout)
	}
}

// stop SIGTERMs the broker; it must exit 0 within stopTimeout.
func (b *broker) stop() {
	b.t.Helper()
	err, ok := b.signalAndWait(syscall.SIGTERM, stopTimeout)
	if !ok {
		b.t.Fatalf("kbroker did not exit within %v of SIGTERM; log tail:\n%s", stopTimeout, b.logTail(logTailLines))
	}
	if err != nil {
		b.t.Fatalf("kbroker exited badly after SIGTERM: %v; log tail:\n%s", err, b.logTail(logTailLines))
	}
}

// restart starts a stopped or killed broker again on the same ports and dir.
func (b *broker) restart() {
	b.t.Helper()
	if b.running() {
		b.stop()
	}
	b.start()
}

// logTail returns the last n lines of the broker's log.
func (b *broker) logTail(n int) string {
	data, err := os.ReadFile(b.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
