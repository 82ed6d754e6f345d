package clustercheck

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

// MetadataFrom asks the broker at addr itself (not whichever broker a
// client would pick) for the metadata of every topic. opts add to the
// client's options (TLS, SASL for a secure listener).
func MetadataFrom(ctx context.Context, addr string, opts ...kgo.Opt) (*kmsg.MetadataResponse, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RequestRetries(0),
		kgo.RetryTimeout(time.Second), kgo.DialTimeout(time.Second)}, opts...)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	// A request without topics goes to the seed broker.
	return kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
}

// Converged asks every broker in addrs for its metadata and returns the
// first answer when all describe topic (every topic when empty) the same
// way; otherwise an error quoting the disagreement.
func Converged(ctx context.Context, addrs []string, topic string, opts ...kgo.Opt) (*kmsg.MetadataResponse, error) {
	if len(addrs) == 0 {
		return nil, fmt.Errorf("no running broker to ask")
	}
	var first *kmsg.MetadataResponse
	for _, addr := range addrs {
		m, err := MetadataFrom(ctx, addr, opts...)
		if err != nil {
			return nil, fmt.Errorf("metadata from %s: %w", addr, err)
		}
		if first == nil {
			first = m
		} else if a, b := Describe(first, topic), Describe(m, topic); a != b {
			return nil, fmt.Errorf("brokers disagree: %s says\n%s--- but %s says\n%s", addrs[0], a, addr, b)
		}
	}
	return first, nil
}

// PartState is one partition as Metadata describes it.
type PartState struct {
	Leader, Epoch int32
	Replicas, ISR []int32
	ErrorCode     int16
}

// PartStates returns every partition of topic in m.
func PartStates(m *kmsg.MetadataResponse, topic string) map[int32]PartState {
	out := map[int32]PartState{}
	for _, tp := range m.Topics {
		if tp.Topic == nil || *tp.Topic != topic {
			continue
		}
		for _, p := range tp.Partitions {
			out[p.Partition] = PartState{p.Leader, p.LeaderEpoch, p.Replicas, p.ISR, p.ErrorCode}
		}
	}
	return out
}

// Describe renders what every broker's metadata must agree on: brokers,
// controller and, for topic (every topic when empty), each partition's
// leader, epoch, replicas, ISR and error.
func Describe(m *kmsg.MetadataResponse, topic string) string {
	var b strings.Builder
	ids := make([]int32, 0, len(m.Brokers))
	for _, br := range m.Brokers {
		ids = append(ids, br.NodeID)
	}
	slices.Sort(ids)
	fmt.Fprintf(&b, "brokers %v controller %d\n", ids, m.ControllerID)
	var names []string
	for _, tp := range m.Topics {
		if tp.Topic != nil && (topic == "" || *tp.Topic == topic) {
			names = append(names, *tp.Topic)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		ps := PartStates(m, name)
		for _, p := range sortedKeys(ps) {
			s := ps[p]
			isr := slices.Clone(s.ISR)
			slices.Sort(isr)
			fmt.Fprintf(&b, "%s/%d leader %d epoch %d replicas %v isr %v err %d\n", name, p, s.Leader, s.Epoch, s.Replicas, isr, s.ErrorCode)
		}
	}
	return b.String()
}

// FullISR holds when topic has parts partitions, each without error, led
// by a live broker, with isrSize ISR members that are all alive.
func FullISR(topic string, parts, isrSize int, alive func(id int32) bool) func(*kmsg.MetadataResponse) bool {
	return func(m *kmsg.MetadataResponse) bool {
		ps := PartStates(m, topic)
		if len(ps) != parts {
			return false
		}
		for _, p := range ps {
			if p.ErrorCode != 0 || !alive(p.Leader) || len(p.ISR) != isrSize {
				return false
			}
			for _, id := range p.ISR {
				if !alive(id) {
					return false
				}
			}
		}
		return true
	}
}

// Ready returns nil once the broker at addr answers Metadata with a list
// of brokers (it has joined a cluster), else why not.
func Ready(ctx context.Context, addr string, opts ...kgo.Opt) error {
	m, err := MetadataFrom(ctx, addr, opts...)
	if err != nil {
		return err
	}
	if len(m.Brokers) == 0 {
		return fmt.Errorf("metadata from %s lists no brokers", addr)
	}
	return nil
}
