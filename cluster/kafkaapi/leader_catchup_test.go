package kafkaapi

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/replication"
)

// fakeApplied is a store whose Raft log holds unapplied entries until
// applyAll.
type fakeApplied struct {
	mu        sync.Mutex
	unapplied bool
	changed   chan struct{}
}

func (f *fakeApplied) Unapplied() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.unapplied
}

func (f *fakeApplied) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

func (f *fakeApplied) applyAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.unapplied = false
	close(f.changed)
	f.changed = make(chan struct{})
}

func TestAwaitApplied(t *testing.T) {
	tests := []struct {
		name      string
		unapplied bool
		electing  bool // the image shows an election that may pick this broker
		leadAfter bool // leadership arrives with the applied entries
		want      bool
	}{
		{"nothing unapplied: answer at once", false, false, true, false},
		{"leadership among the unapplied entries", true, false, true, true},
		{"unapplied entries that do not make it leader", true, false, false, false},
		{"an election pending, its entry not here yet", false, true, true, true},
		{"an election pending that picks another broker", false, true, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeApplied{unapplied: tc.unapplied, changed: make(chan struct{})}
			var leader, checked, electing atomic.Bool
			electing.Store(tc.electing)
			leads := func() bool { checked.Store(true); return leader.Load() }
			done := make(chan bool, 1)
			go func() { done <- awaitApplied(context.Background(), f, leads, electing.Load) }()
			if tc.unapplied || tc.electing {
				// Still waiting while entries are unapplied and it does
				// not lead.
				select {
				case got := <-done:
					t.Fatalf("returned %v before the entries were applied", got)
				case <-time.After(50 * time.Millisecond):
				}
				leader.Store(tc.leadAfter)
				if tc.electing {
					// The election's entry arrives and is applied.
					f.mu.Lock()
					f.unapplied = true
					f.mu.Unlock()
					electing.Store(false)
				}
				f.applyAll()
			}
			select {
			case got := <-done:
				if got != tc.want {
					t.Fatalf("awaitApplied = %v, want %v", got, tc.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("awaitApplied did not return")
			}
			if !tc.unapplied && !tc.electing && checked.Load() {
				t.Fatal("checked leadership with nothing unapplied and no election pending")
			}
		})
	}
}

// Entries that stay unapplied (a cut-off node's uncommitted tail) hold a
// produce at most maxLeadershipWait, and the request's own context ends it
// sooner.
func TestAwaitAppliedBounded(t *testing.T) {
	f := &fakeApplied{unapplied: true, changed: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan bool, 1)
	never := func() bool { return false }
	go func() { done <- awaitApplied(ctx, f, never, never) }()
	cancel()
	select {
	case got := <-done:
		if got {
			t.Fatal("awaitApplied = true without leadership")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("awaitApplied ignored its context")
	}
}

func TestElectionPending(t *testing.T) {
	now := time.Now()
	// Broker 3's listener refused our fetcher.
	n := &Handlers{cfg: &config.Config{NodeID: 2}, liveness: refusingBrokers{3: true}}
	brokers := map[int32]*metadata.Broker{
		1: {ID: 1, Epoch: 5, Fenced: true},
		2: {ID: 2, Epoch: 6},
		3: {ID: 3, Epoch: 7},
		4: {ID: 4, Epoch: 8},
	}
	for _, tc := range []struct {
		name   string
		leader int32
		isr    []int32
		want   bool
	}{
		{"no leader, in the ISR", metadata.NoLeader, []int32{2, 4}, true},
		{"fenced leader, in the ISR", 1, []int32{1, 2}, true},
		{"leader refusing connections, in the ISR", 3, []int32{3, 2}, true},
		{"leader gone, not in the ISR: cannot be elected", 1, []int32{1, 4}, false},
		{"live leader: the client's metadata is stale", 4, []int32{4, 2}, false},
		{"unregistered leader, in the ISR", 9, []int32{9, 2}, true},
		{"already leading", 2, []int32{2, 4}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := &metadata.Image{Brokers: brokers, Topics: map[string]*metadata.Topic{
				"orders": {Name: "orders", Partitions: []*metadata.Partition{{Replicas: []int32{1, 2, 3, 4}, ISR: tc.isr, Leader: tc.leader}}},
			}}
			tp := replication.TopicPartition{Topic: "orders", Partition: 0}
			if got := n.electionPending(img, tp, now); got != tc.want {
				t.Fatalf("electionPending = %v, want %v", got, tc.want)
			}
		})
	}
	if n.electionPending(&metadata.Image{}, replication.TopicPartition{Topic: "gone"}, now) {
		t.Fatal("electionPending for a topic the image does not have")
	}
}

// A Produce waits for unapplied metadata only while it names a topic the
// image lacks: by id from v13, by name before.
func TestProducedTopicsKnown(t *testing.T) {
	id := [16]byte{1}
	img := &metadata.Image{
		Topics:     map[string]*metadata.Topic{"a": {Name: "a", ID: id}},
		TopicsByID: map[[16]byte]*metadata.Topic{id: {Name: "a", ID: id}},
	}
	req := func(version int16, names []string, ids ...[16]byte) *kmsg.ProduceRequest {
		r := kmsg.NewPtrProduceRequest()
		r.Version = version
		for _, n := range names {
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = n
			r.Topics = append(r.Topics, rt)
		}
		for _, id := range ids {
			rt := kmsg.NewProduceRequestTopic()
			rt.TopicID = id
			r.Topics = append(r.Topics, rt)
		}
		return r
	}
	for _, tc := range []struct {
		name string
		req  *kmsg.ProduceRequest
		want bool
	}{
		{"v12 known name", req(12, []string{"a"}), true},
		{"v12 unknown name", req(12, []string{"a", "b"}), false},
		{"v13 known id", req(13, nil, id), true},
		{"v13 unknown id", req(13, nil, id, [16]byte{2}), false},
		{"no topics", req(13, nil), true},
	} {
		if got := producedTopicsKnown(img, tc.req); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
