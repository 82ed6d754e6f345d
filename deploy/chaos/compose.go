package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kbroker/kbroker/storage"

	"github.com/twmb/franz-go/pkg/kgo"
)

// composeTarget drives deploy/docker-compose.yml through the docker CLI:
// brokers on localhost:19092, 29092 and 39092.
type composeTarget struct {
	file     string
	overlay  string   // docker-compose.chaos.yml beside file
	env      []string // CHAOS_KBn_* for the overlay
	compose  []string // "docker compose" or "docker-compose"
	network  string
	dataDir  string // the broker's log.dirs inside the container
	work     string
	ctx      context.Context
	mu       sync.Mutex
	cont     map[int32]string // node id -> container id
	cname    map[int32]string
	down     map[int32]bool
	paused   map[int32]bool
	cut      map[int32]bool
	kills    map[int32]int
	restarts map[int32]int // RestartCount at start
	ours     bool          // no kb container ran before: take it down at the end
	final    []string      // problems collected before taking it down
	issues   []string
	// diskFull: each node's data dir is a tmpfs of the harness's, bind
	// mounted (disk-full nemesis, diskfull.go); diskErr says why not.
	diskFull bool
	diskErr  string
	mounted  map[int32]bool
	filled   map[int32]bool // disk full: the node may exit by itself
}

// dockerAvailable says why docker cannot be used, or "".
func dockerAvailable() string {
	if _, err := exec.LookPath("docker"); err != nil {
		return "docker CLI not found"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "docker", "info").CombinedOutput(); err != nil {
		return fmt.Sprintf("docker engine not reachable: %v %s", err, truncate(strings.TrimSpace(string(out)), 200))
	}
	return ""
}

func docker(args ...string) (string, error) { return dockerEnv(nil, args...) }

// dockerEnv runs a docker command with env added to the harness's.
func dockerEnv(env []string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, truncate(strings.TrimSpace(string(out)), 300))
	}
	return strings.TrimSpace(string(out)), nil
}

func newComposeTarget(file, network, work string) (*composeTarget, error) {
	if file == "" {
		root, err := moduleRoot()
		if err != nil {
			return nil, err
		}
		file = filepath.Join(root, "deploy", "docker-compose.yml")
	}
	t := &composeTarget{file: file, overlay: filepath.Join(filepath.Dir(file), "docker-compose.chaos.yml"),
		network: network, dataDir: "/var/lib/kbroker", work: work,
		cont: map[int32]string{}, cname: map[int32]string{}, down: map[int32]bool{}, paused: map[int32]bool{},
		cut: map[int32]bool{}, kills: map[int32]int{}, restarts: map[int32]int{},
		mounted: map[int32]bool{}, filled: map[int32]bool{}}
	if _, err := docker("docker", "compose", "version"); err == nil {
		t.compose = []string{"docker", "compose"}
	} else if _, err := exec.LookPath("docker-compose"); err == nil {
		t.compose = []string{"docker-compose"}
	} else {
		return nil, fmt.Errorf("neither `docker compose` nor docker-compose is available")
	}
	return t, nil
}

func (t *composeTarget) name() string { return "compose" }
func (t *composeTarget) ids() []int32 { return []int32{1, 2, 3} }
func (t *composeTarget) addr(id int32) string {
	return fmt.Sprintf("localhost:%d", 10000*int(id)+9092)
}
func (t *composeTarget) seeds() []string {
	return []string{t.addr(1), t.addr(2), t.addr(3)}
}

// security: the compose cluster's client listener is PLAINTEXT.
func (t *composeTarget) security() []kgo.Opt { return nil }

func (t *composeTarget) composeCmd(args ...string) (string, error) {
	full := append(append(append([]string{}, t.compose...), "-f", t.file, "-f", t.overlay), args...)
	return dockerEnv(t.env, full...)
}

func (t *composeTarget) start(ctx context.Context) error {
	t.ctx = ctx
	if _, err := docker("docker", "image", "inspect", "kbroker:latest"); err != nil {
		return fmt.Errorf("image kbroker:latest missing: run `make image` first")
	}
	if err := t.prepareDirs(); err != nil {
		return err
	}
	if out, err := t.composeCmd("ps", "-q"); err == nil && strings.TrimSpace(out) == "" {
		t.ours = true
	}
	if _, err := t.composeCmd("up", "-d"); err != nil {
		return err
	}
	for _, id := range t.ids() {
		c, err := t.composeCmd("ps", "-q", fmt.Sprintf("kb%d", id))
		if err != nil {
			return fmt.Errorf("container of kb%d: %w", id, err)
		}
		if strings.TrimSpace(c) == "" {
			return fmt.Errorf("container of kb%d: not running", id)
		}
		c = strings.Fields(c)[0]
		t.cont[id] = c
		name, _ := docker("docker", "inspect", "-f", "{{.Name}}", c)
		t.cname[id] = strings.TrimPrefix(name, "/")
		t.restarts[id] = t.restartCount(id)
	}
	for _, id := range t.ids() {
		if err := waitReady(ctx, t.addr(id), nil, nil); err != nil {
			return err
		}
	}
	return nil
}

func (t *composeTarget) restartCount(id int32) int {
	out, err := docker("docker", "inspect", "-f", "{{.RestartCount}}", t.cont[id])
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(out))
	return n
}

func (t *composeTarget) running(id int32) bool {
	t.mu.Lock()
	filled := t.filled[id] && !t.down[id]
	t.mu.Unlock()
	if filled {
		// A node whose disk is full stops by itself: ask docker.
		if out, err := docker("docker", "inspect", "-f", "{{.State.Running}}", t.cont[id]); err == nil && out == "false" {
			t.set(t.down, id, true)
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return !t.down[id] && !t.paused[id] && !t.cut[id]
}

func (t *composeTarget) set(m map[int32]bool, id int32, v bool) {
	t.mu.Lock()
	m[id] = v
	t.mu.Unlock()
}

func (t *composeTarget) kill(id int32) error {
	t.set(t.down, id, true)
	t.mu.Lock()
	t.kills[id]++
	t.mu.Unlock()
	_, err := docker("docker", "kill", "-s", "KILL", t.cont[id])
	return err
}

func (t *composeTarget) term(id int32) error {
	t.set(t.down, id, true)
	if _, err := docker("docker", "stop", "-t", strconv.Itoa(int(stopTimeout/time.Second)), t.cont[id]); err != nil {
		return err
	}
	code, _ := docker("docker", "inspect", "-f", "{{.State.ExitCode}}", t.cont[id])
	if code != "0" {
		t.mu.Lock()
		t.issues = append(t.issues, fmt.Sprintf("kb%d exited with code %s after SIGTERM", id, code))
		t.mu.Unlock()
	}
	return nil
}

func (t *composeTarget) restart(id int32) error {
	if _, err := docker("docker", "start", t.cont[id]); err != nil {
		return err
	}
	t.set(t.down, id, false)
	return waitReady(t.ctx, t.addr(id), nil, nil)
}

func (t *composeTarget) pause(id int32) error {
	t.set(t.paused, id, true)
	_, err := docker("docker", "pause", t.cont[id])
	return err
}

func (t *composeTarget) resume(id int32) error {
	_, err := docker("docker", "unpause", t.cont[id])
	t.set(t.paused, id, false)
	if err == nil {
		// A clock jump while it was paused could not signal it.
		_, err = docker("docker", "kill", "-s", "USR2", t.cont[id])
	}
	return err
}

// composeSessionTimeout is broker.session.timeout.ms of
// deploy/docker-compose.yml: the default, which it does not override.
const composeSessionTimeout = 9 * time.Second

func (t *composeTarget) sessionTimeout() time.Duration { return composeSessionTimeout }

func (t *composeTarget) isolateSupport() string { return "" }

func (t *composeTarget) isolate(id int32) error {
	t.set(t.cut, id, true)
	_, err := docker("docker", "network", "disconnect", t.network, t.cont[id])
	return err
}

func (t *composeTarget) reconnect(id int32) error {
	_, err := docker("docker", "network", "connect", "--alias", fmt.Sprintf("kb%d", id), t.network, t.cont[id])
	if err == nil || strings.Contains(err.Error(), "already exists") {
		t.set(t.cut, id, false)
		return nil
	}
	return err
}

func (t *composeTarget) heal() error {
	var errs []string
	for _, id := range t.ids() {
		t.mu.Lock()
		p, c, d := t.paused[id], t.cut[id], t.down[id]
		t.mu.Unlock()
		if p {
			if err := t.resume(id); err != nil {
				errs = append(errs, err.Error())
			}
		}
		if c {
			if err := t.reconnect(id); err != nil {
				errs = append(errs, err.Error())
			}
		}
		if d {
			if _, err := docker("docker", "start", t.cont[id]); err != nil {
				errs = append(errs, err.Error())
			} else {
				t.set(t.down, id, false)
			}
		}
	}
	for _, id := range t.ids() {
		if err := waitReady(t.ctx, t.addr(id), nil, nil); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("heal: %s", strings.Join(errs, "; "))
	}
	return nil
}

// replicaLogs copies each container's partition directory out with
// `docker cp` (which works on a FROM scratch image: the daemon reads it).
func (t *composeTarget) replicaLogs(topic string, p int32, hw int64) (map[int32][]byte, string, error) {
	out := map[int32][]byte{}
	for _, id := range t.ids() {
		dst := filepath.Join(t.work, fmt.Sprintf("cp-kb%d-%s-%d", id, topic, p))
		_ = os.RemoveAll(dst)
		src := fmt.Sprintf("%s:%s/%s-%d", t.cont[id], t.dataDir, topic, p)
		if _, err := docker("docker", "cp", src, dst); err != nil {
			return nil, fmt.Sprintf("replica comparison skipped: docker cp failed: %v", err), nil
		}
		b, err := storage.ReadLogBelow(dst, hw)
		if err != nil {
			return nil, "", fmt.Errorf("kb%d: %w", id, err)
		}
		out[id] = b
	}
	return out, "", nil
}

func (t *composeTarget) problems() []string {
	if t.final != nil {
		return t.final
	}
	return t.scan()
}

func (t *composeTarget) scan() []string {
	t.mu.Lock()
	out := append([]string(nil), t.issues...)
	t.mu.Unlock()
	for _, id := range t.ids() {
		if n := t.restartCount(id) - t.restarts[id] - t.kills[id]; n > 0 {
			out = append(out, fmt.Sprintf("kb%d was restarted by docker %d more times than it was killed (exited on its own)", id, n))
		}
		logs, _ := docker("docker", "logs", t.cont[id])
		path := filepath.Join(t.work, fmt.Sprintf("kb%d.log", id))
		if err := os.WriteFile(path, []byte(logs), 0o644); err == nil {
			out = append(out, scanLog(path, fmt.Sprintf("kb%d", id))...)
		}
	}
	return out
}

// close heals the cluster; it takes it down (with its volumes) only when
// this run brought it up, and otherwise leaves the user's cluster running.
func (t *composeTarget) close() {
	_ = t.heal()
	// A cluster on the harness's tmpfs disks cannot outlive the run.
	if t.ours || len(t.mounted) > 0 {
		t.final = append(t.scan(), []string{}...)
		if _, err := t.composeCmd("down", "-v"); err != nil {
			t.final = append(t.final, "compose down: "+err.Error())
		}
	}
	t.unmountDisks()
}
