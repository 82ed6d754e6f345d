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
}

func (f *fakeHeartbeatStore) BrokerHeartbeat(context.Context, int32, int64) (metadata.HeartbeatResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
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
