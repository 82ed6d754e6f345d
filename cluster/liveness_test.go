package cluster

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/internal/testutil"
	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/replication"
)

// fakeHeartbeatStore is a controller that answers heartbeats (or fails
// them) and a local image that lags behind it until apply.
type fakeHeartbeatStore struct {
	mu         sync.Mutex
	img        *metadata.Image
	changed    chan struct{}
	ctrlOffset uint64
	down       bool
	calls      []time.Time // when each heartbeat was sent
}

func (f *fakeHeartbeatStore) BrokerHeartbeat(context.Context, int32, int64) (metadata.HeartbeatResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, time.Now())
	if f.down {
		return metadata.HeartbeatResult{}, errors.New("controller unreachable")
	}
	return metadata.HeartbeatResult{MetadataOffset: f.ctrlOffset}, nil
}

func (f *fakeHeartbeatStore) ReportOfflineReplicas(context.Context, int32, int64, []metadata.TopicPartitions) (int, error) {
	return 0, nil
}

func (f *fakeHeartbeatStore) Image() *metadata.Image {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.img
}

func (f *fakeHeartbeatStore) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

func (f *fakeHeartbeatStore) set(down bool, ctrlOffset uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down, f.ctrlOffset = down, ctrlOffset
}

// apply advances the local image to offset, as raft applying entries does.
func (f *fakeHeartbeatStore) apply(offset uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.img = &metadata.Image{Offset: offset, Brokers: f.img.Brokers}
	close(f.changed)
	f.changed = make(chan struct{})
}

// A broker whose session was lost (cut off from the controller) leads
// again only once its image has applied the metadata up to the offset the
// controller's heartbeat answer carries: before, it may still believe it
// leads partitions the controller moved away while it was cut off.
func TestHeartbeatRenewsSessionOnlyWithMetadataCaughtUp(t *testing.T) {
	f := &fakeHeartbeatStore{
		img:     &metadata.Image{Offset: 5, Brokers: map[int32]*metadata.Broker{1: {ID: 1, Epoch: 3}}},
		changed: make(chan struct{}),
		down:    true,
	}
	n := &Node{
		cfg:      config.Config{NodeID: 1, BrokerHeartbeatIntervalMs: 20},
		logger:   testLogger(t),
		replicas: replication.NewManager(replication.ManagerConfig{}),
	}
	n.session.timeout = 200 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); n.heartbeats(ctx, f) }()
	t.Cleanup(func() { cancel(); <-done })

	testutil.Eventually(t, 10*time.Second, n.sessionLost, "session lost while the controller is unreachable")

	// The controller answers again, at offset 10; this broker's image is
	// at 5.
	f.set(false, 10)
	testutil.CheckFor(t, time.Second, n.sessionLost, "session stays lost while the image lags the controller")

	f.apply(9)
	testutil.CheckFor(t, 300*time.Millisecond, n.sessionLost, "session stays lost one entry short")

	f.apply(10)
	testutil.Eventually(t, 10*time.Second, func() bool { return !n.sessionLost() }, "session renewed once the image caught up")
}

// A broker whose image lags the controller's (applying a large
// CreateTopics) keeps heartbeating every interval: were it to wait for
// its image first, the controller would find it silent and fence it on
// the first dead report (a follower's fetch timing out on it).
func TestHeartbeatsKeepTimeWhileMetadataLags(t *testing.T) {
	f := &fakeHeartbeatStore{
		img:        &metadata.Image{Offset: 5, Brokers: map[int32]*metadata.Broker{1: {ID: 1, Epoch: 3}}},
		changed:    make(chan struct{}),
		ctrlOffset: 10,
	}
	const interval = 50 * time.Millisecond
	n := &Node{
		cfg:      config.Config{NodeID: 1, BrokerHeartbeatIntervalMs: int32(interval / time.Millisecond)},
		logger:   testLogger(t),
		replicas: replication.NewManager(replication.ManagerConfig{}),
	}
	n.session.timeout = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); n.heartbeats(ctx, f) }()
	time.Sleep(20 * interval) // the image never catches up meanwhile
	cancel()
	<-done
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.calls) < 10 {
		t.Fatalf("%d heartbeats in %v at an interval of %v", len(f.calls), 20*interval, interval)
	}
	for i := 1; i < len(f.calls); i++ {
		// A ticker on a loaded machine may fire late; twice the interval
		// is what waiting for the image used to take.
		if gap := f.calls[i].Sub(f.calls[i-1]); gap >= 2*interval {
			t.Errorf("heartbeat %d came %v after the previous one (interval %v)", i, gap, interval)
		}
	}
}
