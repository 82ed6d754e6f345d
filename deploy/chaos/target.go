package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/clustercheck"
	"github.com/kbroker/kbroker/internal/testutil"
)

// target is the cluster under test and the faults it can suffer. Node ids
// are 1..3. Every method is bounded in time.
type target interface {
	name() string
	start(ctx context.Context) error
	ids() []int32
	addr(id int32) string
	seeds() []string
	// security is what every client adds to reach the cluster: TLS and
	// SASL options for a secure cluster, nil for plaintext.
	security() []kgo.Opt
	running(id int32) bool
	kill(id int32) error    // SIGKILL, wait for the exit
	term(id int32) error    // SIGTERM, wait for a clean exit
	restart(id int32) error // start a stopped node, wait until it answers
	pause(id int32) error   // SIGSTOP
	resume(id int32) error  // SIGCONT
	isolateSupport() string // "" when isolate works, else why not
	// diskFullSupport is "" when fillDisk works, else why not.
	diskFullSupport() string
	fillDisk(id int32) error // leave no free byte on the node's data disk
	freeDisk(id int32) error // give the space back
	isolate(id int32) error
	reconnect(id int32) error
	// jumpClock sets node id's wall clock to the host's plus offset (the
	// broker's test-only --fault-clock-file, re-read on SIGUSR2); 0 puts
	// it back. clockJumpSupport is "" when it works, else why not.
	jumpClock(id int32, offset time.Duration) error
	clockJumpSupport() string
	// sessionTimeout is the nodes' broker.session.timeout.ms: pause and
	// isolate last longer, so the controller fences the node and its
	// leaderships move (a shorter fault only tests the client's patience).
	sessionTimeout() time.Duration
	heal() error // resume, reconnect and start every node
	// replicaLogs returns each node's bytes of topic-partition up to the
	// first batch at or past hw, or a note saying why it cannot.
	replicaLogs(topic string, p int32, hw int64) (map[int32][]byte, string, error)
	problems() []string // unexpected exits, panics in logs, unclean stops
	close()
}

const (
	readyTimeout = 30 * time.Second
	stopTimeout  = 30 * time.Second
	killTimeout  = 10 * time.Second
)

// endpoint is how the harness's clients reach the cluster: the seed
// brokers and the security options of the target.
type endpoint struct {
	seeds []string
	sec   []kgo.Opt
}

// opts are the seeds, the security options and then extra.
func (e endpoint) opts(extra ...kgo.Opt) []kgo.Opt {
	return append(append([]kgo.Opt{kgo.SeedBrokers(e.seeds...)}, e.sec...), extra...)
}

// waitReady polls Metadata on addr (with the security options sec) until
// it lists brokers.
func waitReady(ctx context.Context, addr string, sec []kgo.Opt, exited func() bool) error {
	err := testutil.Poll(ctx, readyTimeout, func() error {
		if exited != nil && exited() {
			return testutil.Permanent(errExited)
		}
		return clustercheck.Ready(ctx, addr, sec...)
	})
	if err != nil {
		return fmt.Errorf("%s not ready: %w", addr, err)
	}
	return nil
}

// errExited is waitReady's error when the process exited while starting.
var errExited = errors.New("exited while starting")

// healthy holds when every node is registered and every partition of
// topic is led by a running node with an ISR of every (running) node.
func healthy(t target, topic string, parts int) func(m *kmsg.MetadataResponse) bool {
	full := clustercheck.FullISR(topic, parts, len(t.ids()), t.running)
	return func(m *kmsg.MetadataResponse) bool {
		return len(m.Brokers) == len(t.ids()) && full(m)
	}
}

// runningAddrs lists the client address of every running node.
func runningAddrs(t target) []string {
	var out []string
	for _, id := range t.ids() {
		if t.running(id) {
			out = append(out, t.addr(id))
		}
	}
	return out
}

// waitConverged polls every running node until their metadata for topic
// agree and cond holds.
func waitConverged(ctx context.Context, t target, topic string, timeout time.Duration, cond func(*kmsg.MetadataResponse) bool) (*kmsg.MetadataResponse, error) {
	var got *kmsg.MetadataResponse
	err := testutil.Poll(ctx, timeout, func() error {
		m, err := clustercheck.Converged(ctx, runningAddrs(t), topic, t.security()...)
		if err != nil {
			return err
		}
		if !cond(m) {
			return fmt.Errorf("condition not met:\n%s", clustercheck.Describe(m, topic))
		}
		got = m
		return nil
	})
	return got, err
}

// anyMetadata returns the metadata of the first running node that answers.
func anyMetadata(ctx context.Context, t target) (*kmsg.MetadataResponse, error) {
	var last error = fmt.Errorf("no running node")
	for _, addr := range runningAddrs(t) {
		m, err := clustercheck.MetadataFrom(ctx, addr, t.security()...)
		if err == nil {
			return m, nil
		}
		last = err
	}
	return nil, last
}
