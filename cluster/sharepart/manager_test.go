package sharepart

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/cluster/share"
	"github.com/kbroker/kbroker/purgatory"
	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/storage"
	"github.com/kbroker/kbroker/wire/record"
)

// fakeReplica is a leader holding n one-record batches from offset 0.
type fakeReplica struct {
	batches [][]byte
}

func newFakeReplica(t *testing.T, n int) *fakeReplica {
	r := &fakeReplica{}
	for i := range n {
		b, err := record.Build(record.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, []record.Record{{Value: []byte("v")}})
		if err != nil {
			t.Fatal(err)
		}
		record.Batch(b).SetBaseOffset(int64(i))
		r.batches = append(r.batches, b)
	}
	return r
}

func (r *fakeReplica) IsLeader() bool          { return true }
func (r *fakeReplica) LeaderEpoch() int32      { return 1 }
func (r *fakeReplica) LogStartOffset() int64   { return 0 }
func (r *fakeReplica) HighWatermark() int64    { return int64(len(r.batches)) }
func (r *fakeReplica) LastStableOffset() int64 { return int64(len(r.batches)) }
func (r *fakeReplica) Read(off int64, maxBytes int, upper int64) ([]byte, error) {
	var out []byte
	for i := off; i < upper && i < int64(len(r.batches)); i++ {
		out = append(out, r.batches[i]...)
	}
	return out, nil
}
func (r *fakeReplica) AbortedTransactions(int64, int64) ([]storage.AbortedTxn, error) {
	return nil, nil
}

type fakeHost struct {
	rep *fakeReplica
	set Settings
}

func (h *fakeHost) Replica([16]byte, int32) (Replica, string, error) { return h.rep, "t", nil }
func (h *fakeHost) Settings(string) Settings                         { return h.set }

// fakePersister keeps the states in memory; fail makes writes fail.
type fakePersister struct {
	mu     sync.Mutex
	states map[share.StateKey]share.Snapshot
	fail   error
	writes int
}

func (p *fakePersister) Read(_ context.Context, k share.StateKey, _ int32) (share.Snapshot, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.states[k]
	if !ok {
		return share.Snapshot{}, kerr.UnknownTopicOrPartition
	}
	return s, nil
}

func (p *fakePersister) Write(_ context.Context, k share.StateKey, _ int32, s share.Snapshot) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fail != nil {
		return p.fail
	}
	p.writes++
	p.states[k] = s
	return nil
}

func (p *fakePersister) Initialize(_ context.Context, k share.StateKey, epoch int32, start int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.states[k] = share.Snapshot{StateEpoch: epoch, StartOffset: start, Batches: []share.StateBatch{}}
	return nil
}

func newTestManager(t *testing.T, n int) (*Manager, *fakePersister) {
	cfg := share.Config{LockDuration: 30 * time.Second, DeliveryCountLimit: 3, MaxRecordLocks: 100}
	host := &fakeHost{rep: newFakeReplica(t, n), set: Settings{Partition: cfg, Earliest: true}}
	pers := &fakePersister{states: map[share.StateKey]share.Snapshot{}}
	w := purgatory.New[replication.TopicPartition]("test")
	t.Cleanup(w.Close)
	return New(host, pers, w, slog.New(slog.NewTextHandler(io.Discard, nil))), pers
}

var tp0 = TP{TopicID: [16]byte{1}, Partition: 0}

func fetch(m *Manager, member string, epoch int32, acks ...share.Ack) FetchResult {
	pr := PartitionRequest{TP: tp0, Acks: acks, HasAcks: len(acks) > 0}
	return m.Fetch(context.Background(), FetchRequest{Group: "g", Member: member, Epoch: epoch, Partitions: []PartitionRequest{pr}, MaxRecords: 3})
}

func TestShareSessionEpochs(t *testing.T) {
	m, _ := newTestManager(t, 10)
	for _, tc := range []struct {
		name  string
		req   FetchRequest
		want  error
		setup func()
	}{
		{"no session", FetchRequest{Group: "g", Member: "a", Epoch: 3}, kerr.ShareSessionNotFound, nil},
		{"close without session", FetchRequest{Group: "g", Member: "a", Epoch: CloseEpoch}, kerr.ShareSessionNotFound, nil},
		{"acknowledge cannot open", FetchRequest{Group: "g", Member: "a", Epoch: OpenEpoch, Acknowledge: true}, kerr.InvalidShareSessionEpoch, nil},
		{"acks when opening", FetchRequest{Group: "g", Member: "a", Epoch: OpenEpoch,
			Partitions: []PartitionRequest{{TP: tp0, HasAcks: true, Acks: []share.Ack{{First: 0, Last: 0, Types: []share.AckType{share.Accept}}}}}}, kerr.InvalidRequest, nil},
		{"no member", FetchRequest{Group: "g", Epoch: OpenEpoch}, kerr.InvalidRequest, nil},
		{"wrong epoch", FetchRequest{Group: "g", Member: "b", Epoch: 5}, kerr.InvalidShareSessionEpoch, func() { fetch(m, "b", OpenEpoch) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				tc.setup()
			}
			if res := m.Fetch(context.Background(), tc.req); !errors.Is(res.Err, tc.want) {
				t.Fatalf("err %v, want %v", res.Err, tc.want)
			}
		})
	}
}

// Acquired records are acknowledged by their holder only; a bad
// acknowledgement changes nothing; the state is persisted before the
// answer.
func TestShareFetchAcknowledge(t *testing.T) {
	m, pers := newTestManager(t, 10)
	res := fetch(m, "a", OpenEpoch)
	if res.Err != nil || len(res.Partitions) != 1 || len(res.Partitions[0].Acquired) != 1 {
		t.Fatalf("first fetch: %+v", res)
	}
	if got := res.Partitions[0].Acquired[0]; got.First != 0 || got.Last != 2 || got.DeliveryCount != 1 {
		t.Fatalf("acquired %+v, want 0-2 delivered once", got)
	}
	fetch(m, "b", OpenEpoch) // b holds 3-5
	epoch := int32(1)
	for _, tc := range []struct {
		name string
		ack  share.Ack
		want error
	}{
		{"another member's record", share.Ack{First: 3, Last: 3, Types: []share.AckType{share.Accept}}, kerr.InvalidRecordState},
		{"never acquired", share.Ack{First: 8, Last: 8, Types: []share.AckType{share.Accept}}, kerr.InvalidRequest},
		{"unknown type", share.Ack{First: 0, Last: 0, Types: []share.AckType{9}}, kerr.InvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := m.Fetch(context.Background(), FetchRequest{Group: "g", Member: "a", Epoch: epoch, Acknowledge: true,
				Partitions: []PartitionRequest{{TP: tp0, HasAcks: true, Acks: []share.Ack{tc.ack}}}})
			epoch++
			if r.Err != nil || len(r.Partitions) != 1 || !errors.Is(r.Partitions[0].AckErr, tc.want) {
				t.Fatalf("answer %+v, want ack error %v", r, tc.want)
			}
		})
	}
	r := m.Fetch(context.Background(), FetchRequest{Group: "g", Member: "a", Epoch: epoch, Acknowledge: true,
		Partitions: []PartitionRequest{{TP: tp0, HasAcks: true, Acks: []share.Ack{{First: 0, Last: 2, Types: []share.AckType{share.Accept}}}}}})
	if r.Err != nil || r.Partitions[0].AckErr != nil {
		t.Fatalf("good acknowledgement: %+v", r)
	}
	k := share.StateKey{Group: "g", TopicID: tp0.TopicID, Partition: 0}
	if s := pers.states[k]; s.StartOffset != 3 {
		t.Fatalf("persisted start offset %d, want 3", s.StartOffset)
	}
	// Acknowledged twice (offset 5, above the start offset while b holds
	// 3 and 4): refused the second time.
	for i, want := range []error{nil, kerr.InvalidRecordState} {
		r = m.Fetch(context.Background(), FetchRequest{Group: "g", Member: "b", Epoch: int32(i + 1), Acknowledge: true,
			Partitions: []PartitionRequest{{TP: tp0, HasAcks: true, Acks: []share.Ack{{First: 5, Last: 5, Types: []share.AckType{share.Accept}}}}}})
		if r.Err != nil || !errors.Is(r.Partitions[0].AckErr, want) {
			t.Fatalf("acknowledgement %d of offset 5: %+v, want %v", i+1, r, want)
		}
	}
}

// A record whose lock ended cannot be acknowledged by its old holder
// (INVALID_RECORD_STATE) and goes to the next fetch, counted.
func TestShareExpiredLock(t *testing.T) {
	m, _ := newTestManager(t, 3)
	fetch(m, "a", OpenEpoch)
	m.expireLocks(context.Background(), time.Now().Add(31*time.Second))
	r := fetch(m, "a", 1, share.Ack{First: 0, Last: 0, Types: []share.AckType{share.Accept}})
	if r.Err != nil || !errors.Is(r.Partitions[0].AckErr, kerr.InvalidRecordState) {
		t.Fatalf("acknowledging an expired lock: %+v", r)
	}
	// The same fetch re-acquired them, delivered a second time.
	if got := r.Partitions[0].Acquired; len(got) != 1 || got[0].DeliveryCount != 2 {
		t.Fatalf("redelivery %+v", got)
	}
}

// A state that cannot be persisted is rolled back: the client's
// acknowledgement fails and the records are still its own.
func TestSharePersistFailureRollsBack(t *testing.T) {
	m, pers := newTestManager(t, 3)
	fetch(m, "a", OpenEpoch)
	pers.mu.Lock()
	pers.fail = kerr.CoordinatorNotAvailable
	pers.mu.Unlock()
	ack := share.Ack{First: 0, Last: 2, Types: []share.AckType{share.Accept}}
	r := m.Fetch(context.Background(), FetchRequest{Group: "g", Member: "a", Epoch: 1, Acknowledge: true,
		Partitions: []PartitionRequest{{TP: tp0, HasAcks: true, Acks: []share.Ack{ack}}}})
	if r.Err != nil || !errors.Is(r.Partitions[0].AckErr, kerr.CoordinatorNotAvailable) {
		t.Fatalf("answer %+v, want the persister's error", r)
	}
	pers.mu.Lock()
	pers.fail = nil
	pers.mu.Unlock()
	r = m.Fetch(context.Background(), FetchRequest{Group: "g", Member: "a", Epoch: 2, Acknowledge: true,
		Partitions: []PartitionRequest{{TP: tp0, HasAcks: true, Acks: []share.Ack{ack}}}})
	if r.Err != nil || r.Partitions[0].AckErr != nil {
		t.Fatalf("acknowledging again after the failure: %+v", r)
	}
}

// Closing the session releases what the member still holds.
func TestShareCloseReleases(t *testing.T) {
	m, _ := newTestManager(t, 3)
	fetch(m, "a", OpenEpoch)
	if r := fetch(m, "a", CloseEpoch); r.Err != nil {
		t.Fatal(r.Err)
	}
	r := fetch(m, "b", OpenEpoch)
	if len(r.Partitions) != 1 || len(r.Partitions[0].Acquired) != 1 || r.Partitions[0].Acquired[0].DeliveryCount != 2 {
		t.Fatalf("after a's session closed b got %+v", r.Partitions)
	}
}
