package main

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// target is the cluster under test and the faults it can suffer. Node ids
// are 1..3. Every method is bounded in time.
type target interface {
	name() string
	start(ctx context.Context) error
	ids() []int32
	addr(id int32) string
	seeds() []string
	running(id int32) bool
	kill(id int32) error    // SIGKILL, wait for the exit
	term(id int32) error    // SIGTERM, wait for a clean exit
	restart(id int32) error // start a stopped node, wait until it answers
	pause(id int32) error   // SIGSTOP
	resume(id int32) error  // SIGCONT
	isolateSupport() string // "" when isolate works, else why not
	isolate(id int32) error
	reconnect(id int32) error
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

// metadataFrom asks the broker at addr itself for the cluster metadata.
func metadataFrom(ctx context.Context, addr string) (*kmsg.MetadataResponse, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0),
		kgo.RetryTimeout(time.Second), kgo.DialTimeout(time.Second))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	// The request goes to the seed broker, not a random one.
	return req.RequestWith(ctx, cl)
}

// waitReady polls Metadata on addr until it lists brokers.
func waitReady(ctx context.Context, addr string, exited func() bool) error {
	deadline := time.Now().Add(readyTimeout)
	var last error
	for i := 0; i < 300 && time.Now().Before(deadline) && ctx.Err() == nil; i++ {
		if exited != nil && exited() {
			return fmt.Errorf("%s exited while starting", addr)
		}
		m, err := metadataFrom(ctx, addr)
		if err == nil && len(m.Brokers) > 0 {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("metadata lists no brokers")
		}
		last = err
		time.Sleep(150 * time.Millisecond)
	}
	return fmt.Errorf("%s not ready within %v: %v", addr, readyTimeout, last)
}

type partState struct {
	leader, epoch int32
	replicas, isr []int32
	errCode       int16
}

func partStates(m *kmsg.MetadataResponse, topic string) map[int32]partState {
	out := map[int32]partState{}
	for _, tp := range m.Topics {
		if tp.Topic == nil || *tp.Topic != topic {
			continue
		}
		for _, p := range tp.Partitions {
			out[p.Partition] = partState{p.Leader, p.LeaderEpoch, p.Replicas, p.ISR, p.ErrorCode}
		}
	}
	return out
}

// describe renders what every broker's metadata must agree on.
func describe(m *kmsg.MetadataResponse, topic string) string {
	var b strings.Builder
	var ids []int32
	for _, br := range m.Brokers {
		ids = append(ids, br.NodeID)
	}
	slices.Sort(ids)
	fmt.Fprintf(&b, "brokers %v controller %d\n", ids, m.ControllerID)
	ps := partStates(m, topic)
	keys := make([]int, 0, len(ps))
	for p := range ps {
		keys = append(keys, int(p))
	}
	sort.Ints(keys)
	for _, k := range keys {
		p := ps[int32(k)]
		isr := slices.Clone(p.isr)
		slices.Sort(isr)
		fmt.Fprintf(&b, "p%d leader %d epoch %d isr %v err %d\n", k, p.leader, p.epoch, isr, p.errCode)
	}
	return b.String()
}

// healthy holds when the running nodes agree, every node is registered and
// running, and every partition of topic is led by a running node with an
// ISR of every node.
func healthy(t target, topic string, parts int) func(m *kmsg.MetadataResponse) bool {
	return func(m *kmsg.MetadataResponse) bool {
		if len(m.Brokers) != len(t.ids()) {
			return false
		}
		ps := partStates(m, topic)
		if len(ps) != parts {
			return false
		}
		for _, p := range ps {
			if p.errCode != 0 || !t.running(p.leader) || len(p.isr) != len(t.ids()) {
				return false
			}
		}
		return true
	}
}

// waitConverged polls every running node until their metadata for topic
// agree and cond holds.
func waitConverged(ctx context.Context, t target, topic string, timeout time.Duration, cond func(*kmsg.MetadataResponse) bool) (*kmsg.MetadataResponse, error) {
	deadline := time.Now().Add(timeout)
	last := "no running node"
	for i := 0; i < 2000 && time.Now().Before(deadline) && ctx.Err() == nil; i++ {
		var first *kmsg.MetadataResponse
		agree := true
		for _, id := range t.ids() {
			if !t.running(id) {
				continue
			}
			m, err := metadataFrom(ctx, t.addr(id))
			if err != nil {
				agree, last = false, fmt.Sprintf("node %d: %v", id, err)
				break
			}
			if first == nil {
				first = m
			} else if describe(m, topic) != describe(first, topic) {
				agree, last = false, fmt.Sprintf("nodes disagree:\n%s---\n%s", describe(first, topic), describe(m, topic))
				break
			}
		}
		if agree && first != nil {
			if cond(first) {
				return first, nil
			}
			last = describe(first, topic)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return nil, fmt.Errorf("not converged within %v; last:\n%s", timeout, last)
}

// anyMetadata returns the metadata of the first running node that answers.
func anyMetadata(ctx context.Context, t target) (*kmsg.MetadataResponse, error) {
	var last error = fmt.Errorf("no running node")
	for _, id := range t.ids() {
		if !t.running(id) {
			continue
		}
		m, err := metadataFrom(ctx, t.addr(id))
		if err == nil {
			return m, nil
		}
		last = err
	}
	return nil, last
}
