package itest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/clustercheck"
	"github.com/kbroker/kbroker/internal/testutil"
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
	defer func() {
		// A broker left running still writes there; say so rather than
		// leave the directory behind unnoticed.
		if err := os.RemoveAll(tmp); err != nil {
			fmt.Fprintln(os.Stderr, "itest: removing the work dir:", err)
		}
	}()

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
	// kbroker_poison: released pooled buffers are overwritten
	// (storage/readbuf.go), so reading one after its release corrupts
	// what the clients here check.
	build := exec.Command("go", "build", "-tags", "kbroker_poison", "-o", brokerBin, "./cmd/kbroker")
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
	spare    string   // the spareAddr of startBroker
	admin    string   // admin.listener host:port; "" when it has none
	// controllerOnly: process.roles=controller. It has no client
	// listener (addr is ""), so readiness is its admin listener's
	// /readyz instead of Metadata.
	controllerOnly bool
	nofile         int // > 0: the process runs under ulimit -n nofile
	// bin is the kbroker binary the next start runs; "" is this build's
	// (brokerBin). The upgrade tests switch it between releases.
	bin string

	cmd     *exec.Cmd
	logFile *os.File
	done    chan struct{} // closed when cmd has been waited for
	waitErr error
	starts  int
}

// spareAddr in a config value of startBroker stands for one more reserved
// 127.0.0.1 port (e.g. "admin.listener="+spareAddr); broker.spare is it.
const spareAddr = "{spare}"

// startAttempts bounds the starts on fresh ports when a node lost the
// race for a reserved port (see testutil.Ports).
const startAttempts = 3

// startBroker starts a single-node broker+controller with its data in dir,
// which must be empty (a start that lost its ports to another process is
// retried on new ones with dir emptied), and waits until it answers
// Metadata. sets are extra key=value configs.
func startBroker(t testing.TB, dir string, sets ...string) *broker {
	t.Helper()
	return startBrokerLimited(t, dir, 0, sets...)
}

// startBrokerLimited is startBroker with the process's file-descriptor
// limit (soft and hard) set to nofile when it is > 0.
func startBrokerLimited(t testing.TB, dir string, nofile int, sets ...string) *broker {
	t.Helper()
	for attempt := 1; ; attempt++ {
		ports := testutil.MustReservePorts(t, 3)
		ctrl := ports.Addr(1)
		var resolved []string
		for _, s := range sets {
			resolved = append(resolved, strings.ReplaceAll(s, spareAddr, ports.Addr(2)))
		}
		b := newBroker(t, 1, dir, ports.Addr(0), ctrl, "1@"+ctrl, resolved...)
		b.spare = ports.Addr(2)
		b.nofile = nofile
		ports.MustRelease(t)
		b.launch()
		err := b.ready()
		if err == nil {
			return b
		}
		if attempt == startAttempts || !testutil.AddrInUse(err, b.logTail(logTailLines)) {
			b.t.Fatalf("%v; log tail:\n%s", err, b.logTail(logTailLines))
		}
		t.Logf("start attempt %d lost a port, retrying on new ones: %v", attempt, err)
		b.kill9()
		emptyDir(t, dir)
	}
}

// emptyDir removes everything in dir.
func emptyDir(t testing.TB, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
}

// newBroker prepares (but does not start) node id with its listeners on
// addr (clients) and ctrl (Raft), the given quorum voters and data dir.
// An empty addr gives a node with the controller listener only (for
// process.roles=controller).
func newBroker(t testing.TB, id int, dir, addr, ctrl, voters string, sets ...string) *broker {
	t.Helper()
	b := &broker{
		t:        t,
		dir:      dir,
		addr:     addr,
		ctrlAddr: ctrl,
		logPath:  filepath.Join(t.TempDir(), "kbroker.log"),
	}
	b.args = []string{"serve", "--set", fmt.Sprintf("node.id=%d", id)}
	if addr == "" {
		// A controller-only node listens on its controller listener
		// alone, as Kafka's does (config refuses any other).
		b.args = append(b.args, "--set", "listeners=CONTROLLER://"+b.ctrlAddr)
	} else {
		b.args = append(b.args,
			"--set", fmt.Sprintf("listeners=PLAINTEXT://%s,CONTROLLER://%s", b.addr, b.ctrlAddr),
			"--set", "advertised.listeners=PLAINTEXT://"+b.addr)
	}
	b.args = append(b.args,
		"--set", "controller.quorum.voters="+voters,
		"--set", "log.dirs="+dir,
	)
	if lvl := os.Getenv("KB_TEST_LOG"); lvl != "" {
		b.args = append(b.args, "--log-level", lvl)
	}
	for _, s := range sets {
		b.args = append(b.args, "--set", s)
	}
	t.Cleanup(func() {
		if b.running() {
			// The exit status of a killed broker says nothing; one that
			// outlives SIGKILL would hold its ports and files.
			if _, exited := b.signalAndWait(syscall.SIGKILL, killTimeout); !exited {
				t.Errorf("kbroker %s did not exit within %v of SIGKILL", b.addr, killTimeout)
			}
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
	bin := b.bin
	if bin == "" {
		bin = brokerBin
	}
	fmt.Fprintf(b.logFile, "=== itest: start %d: %s %s\n", b.starts, bin, strings.Join(b.args, " "))

	cmd := exec.Command(bin, b.args...)
	if b.nofile > 0 {
		// exec keeps the pid, so signals still reach the broker.
		cmd = exec.Command("sh", append([]string{"-c", fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, b.nofile), bin}, b.args...)...)
	}
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

// waitReady waits until the broker answers Metadata, failing the test
// when it does not within readyTimeout.
func (b *broker) waitReady() {
	b.t.Helper()
	if err := b.ready(); err != nil {
		b.t.Fatalf("%v; log tail:\n%s", err, b.logTail(logTailLines))
	}
}

// errExited is ready's error when the process is gone.
var errExited = errors.New("kbroker exited during start")

// ready polls Metadata on the broker until it lists brokers, for at most
// readyTimeout; it returns early when the process exits.
func (b *broker) ready() error {
	err := testutil.Poll(context.Background(), readyTimeout, func() error {
		if !b.running() {
			return testutil.Permanent(fmt.Errorf("%w (%v)", errExited, b.waitErr))
		}
		if b.controllerOnly {
			return adminReady(b.admin)
		}
		return clustercheck.Ready(context.Background(), b.addr)
	})
	if err != nil {
		return fmt.Errorf("kbroker %s not ready: %w", b.addr, err)
	}
	return nil
}

// adminReady returns nil once the admin listener at addr answers /readyz
// with 200, else why not.
func adminReady(addr string) error {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + addr + "/readyz")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz on %s: %d %s", addr, resp.StatusCode, bytes.TrimSpace(body))
	}
	return nil
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
