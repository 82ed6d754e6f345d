package replication

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"github.com/kbroker/kbroker/internal/testutil"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/storage"
	"github.com/kbroker/kbroker/wire/record"
)

// fakeImages is an ImageSource the test drives by hand.
type fakeImages struct {
	mu      sync.Mutex
	img     *metadata.Image
	changed chan struct{}
}

func newFakeImages(brokers ...int32) *fakeImages {
	img := &metadata.Image{Offset: 1, Brokers: map[int32]*metadata.Broker{},
		Topics: map[string]*metadata.Topic{}, TopicsByID: map[[16]byte]*metadata.Topic{}}
	for _, id := range brokers {
		img.Brokers[id] = &metadata.Broker{ID: id, Endpoints: []metadata.Endpoint{
			{Listener: "REPLICATION", Host: "mem", Port: id, SecurityProtocol: "PLAINTEXT"}}}
	}
	return &fakeImages{img: img, changed: make(chan struct{})}
}

func (f *fakeImages) Image() *metadata.Image {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.img
}

func (f *fakeImages) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

// testTopicID is the id the fake images give topic.
func testTopicID(topic string) [16]byte {
	h := sha256.Sum256([]byte(topic))
	return [16]byte(h[:16])
}

// update publishes a copy of the image with topic's partition p changed
// by mut (or created with it), under a new offset.
func (f *fakeImages) update(topic string, p int32, mut func(*metadata.Partition) error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	next := *f.img
	next.Offset++
	next.Topics = maps.Clone(f.img.Topics)
	next.TopicsByID = maps.Clone(f.img.TopicsByID)
	old, ok := next.Topics[topic]
	// Distinct names get distinct ids: v13+ fetches name topics by id.
	t := &metadata.Topic{Name: topic, ID: testTopicID(topic)}
	if ok {
		c := *old
		t = &c
	}
	t.Partitions = slices.Clone(t.Partitions)
	for int(p) >= len(t.Partitions) {
		t.Partitions = append(t.Partitions, &metadata.Partition{ID: int32(len(t.Partitions)), Leader: metadata.NoLeader})
	}
	np := *t.Partitions[p]
	np.Replicas, np.ISR = slices.Clone(np.Replicas), slices.Clone(np.ISR)
	if err := mut(&np); err != nil {
		return err
	}
	t.Partitions[p] = &np
	next.Topics[topic] = t
	next.TopicsByID[t.ID] = t
	f.img = &next
	close(f.changed)
	f.changed = make(chan struct{})
	return nil
}

// setBroker publishes a copy of the image with broker id registered (or
// changed) by mut.
func (f *fakeImages) setBroker(id int32, mut func(*metadata.Broker)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	next := *f.img
	next.Offset++
	next.Brokers = maps.Clone(f.img.Brokers)
	b := metadata.Broker{ID: id, Endpoints: []metadata.Endpoint{
		{Listener: "REPLICATION", Host: "mem", Port: id, SecurityProtocol: "PLAINTEXT"}}}
	if old, ok := next.Brokers[id]; ok {
		b = *old
	}
	mut(&b)
	next.Brokers[id] = &b
	f.img = &next
	close(f.changed)
	f.changed = make(chan struct{})
}

// waitApplied waits until n's manager has applied the current image.
func (c *testCluster) waitApplied(t testing.TB, n *testNode) {
	t.Helper()
	want := c.images.Image().Offset
	testutil.Eventually(t, 10*time.Second, func() bool {
		n.m.mu.RLock()
		defer n.m.mu.RUnlock()
		return n.m.mu.applied >= want
	}, "node %d to apply image %d", n.id, want)
}

// elect makes leader the leader of topic-p with isr, bumping both epochs.
func (f *fakeImages) elect(t testing.TB, topic string, p int32, replicas []int32, leader int32, isr ...int32) {
	t.Helper()
	if err := f.update(topic, p, func(mp *metadata.Partition) error {
		if mp.Replicas != nil {
			mp.LeaderEpoch++
			mp.PartitionEpoch++
		}
		mp.Replicas, mp.Leader, mp.ISR = replicas, leader, isr
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func (f *fakeImages) partition(topic string, p int32) metadata.Partition {
	mp, _ := f.Image().Partition(topic, p)
	return *mp
}

// ChangePartition is the controller's AlterPartition, applied to the image.
func (f *fakeImages) ChangePartition(_ context.Context, c metadata.PartitionChange) error {
	return f.update(c.Topic, c.Partition, func(mp *metadata.Partition) error {
		if c.PartitionEpoch != mp.PartitionEpoch {
			return fmt.Errorf("%w: at %d, change based on %d", metadata.ErrStalePartitionEpoch, mp.PartitionEpoch, c.PartitionEpoch)
		}
		if c.LeaderEpoch != mp.LeaderEpoch {
			return fmt.Errorf("%w: at %d, change based on %d", metadata.ErrFencedLeaderEpoch, mp.LeaderEpoch, c.LeaderEpoch)
		}
		if c.Leader != mp.Leader {
			mp.LeaderEpoch++
		}
		mp.Leader, mp.ISR = c.Leader, slices.Clone(c.ISR)
		mp.PartitionEpoch++
		return nil
	})
}

// testCluster is a set of Managers with real logs, connected in memory.
type testCluster struct {
	t      testing.TB
	images *fakeImages
	lagMax time.Duration
	// skipEpochRequest makes followers rely on diverging-epoch fetch
	// responses alone (KIP-320) instead of asking OffsetForLeaderEpoch.
	skipEpochRequest bool
	// flushMessages, when set, is every topic's flush.messages.
	flushMessages int64
	// current is every node's ManagerConfig.Current; nil: every image
	// is current (as every image a node applies after its start).
	current func(node int32, img *metadata.Image) bool
	// isr, when set, is every node's ISRChanger (default: images).
	isr ISRChanger
	// fetchWaitMax, when set, is every node's replica.fetch.wait.max.ms
	// (default here 50ms).
	fetchWaitMax time.Duration
	// Hooks of every node, set before starting nodes.
	onHighWatermark func(node int32, tp TopicPartition)
	onRoleChange    func(node int32, tp TopicPartition)
	// fetchHook, when set, sees every answer a leader's Fetch computes
	// (each read of a waiting one too) and may change it; true answers
	// at once.
	fetchHook func(leader int32, req *kmsg.FetchRequest, resp *kmsg.FetchResponse) bool

	base string // parent of the nodes' log dirs

	mu    sync.Mutex
	nodes map[int32]*testNode
	down  map[int32]bool // leaders that refuse connections
	// fetching are the Fetch requests the leaders are serving.
	fetching map[*kmsg.FetchRequest]bool
}

// inFlight returns the Fetch requests of follower the leaders are
// serving (waiting for data, typically).
func (c *testCluster) inFlight(follower int32) []*kmsg.FetchRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*kmsg.FetchRequest
	for req := range c.fetching {
		if req.ReplicaID == follower {
			out = append(out, req)
		}
	}
	return out
}

func (c *testCluster) isFetching(req *kmsg.FetchRequest) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fetching[req]
}

type testNode struct {
	id     int32
	dir    string
	logs   *storage.Manager
	m      *Manager
	cancel context.CancelFunc
	done   chan struct{}

	amu      sync.Mutex
	appended chan struct{} // closed and replaced on every leader append
}

func (n *testNode) appendSignal() <-chan struct{} {
	n.amu.Lock()
	defer n.amu.Unlock()
	return n.appended
}

func newTestCluster(t testing.TB, ids ...int32) *testCluster {
	c := &testCluster{t: t, images: newFakeImages(ids...), lagMax: 30 * time.Second, base: t.TempDir(),
		nodes: map[int32]*testNode{}, down: map[int32]bool{}, fetching: map[*kmsg.FetchRequest]bool{}}
	t.Cleanup(func() {
		for _, id := range slices.Collect(maps.Keys(c.nodes)) {
			c.stop(id)
		}
	})
	return c
}

func (c *testCluster) start(id int32) *testNode {
	t := c.t
	dir := filepath.Join(c.base, fmt.Sprint("node", id))
	logs, err := storage.OpenManager([]string{dir}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	n := &testNode{id: id, dir: dir, logs: logs, done: make(chan struct{}), appended: make(chan struct{})}
	logger := slog.New(slog.DiscardHandler)
	if testing.Verbose() {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("node", id)
	}
	n.m = NewManager(ManagerConfig{
		NodeID: id, Logs: logs, Logger: logger,
		TopicConfig: func(map[string]string) config.TopicConfig {
			cfg := config.Default()
			tc := cfg.TopicDefaults()
			if c.flushMessages != 0 {
				tc.FlushMessages = c.flushMessages
			}
			return tc
		},
		InterBrokerListener:  "REPLICATION",
		ReplicaFetchMaxBytes: 1 << 20,
		ReplicaFetchWaitMax:  cmp.Or(c.fetchWaitMax, 50*time.Millisecond),
		ReplicaLagTimeMax:    c.lagMax,
		ISR:                  cmp.Or[ISRChanger](c.isr, c.images),
		Dialer:               memDialer{c},
		Current: func(img *metadata.Image) bool {
			return c.current == nil || c.current(id, img)
		},
		OnHighWatermark: func(tp TopicPartition) {
			if c.onHighWatermark != nil {
				c.onHighWatermark(id, tp)
			}
		},
		OnRoleChange: func(tp TopicPartition) {
			if c.onRoleChange != nil {
				c.onRoleChange(id, tp)
			}
		},
		OnLogAppend: func(TopicPartition) {
			n.amu.Lock()
			close(n.appended)
			n.appended = make(chan struct{})
			n.amu.Unlock()
		},
	})
	n.m.skipEpochRequest = c.skipEpochRequest
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	go func() { defer close(n.done); n.m.Run(ctx, c.images) }()
	c.mu.Lock()
	c.nodes[id] = n
	c.mu.Unlock()
	return n
}

// stop stops a node's manager and closes its logs, as a crash would
// leave them (minus the unflushed page cache, which survives here).
func (c *testCluster) stop(id int32) {
	c.mu.Lock()
	n := c.nodes[id]
	var cancel context.CancelFunc
	if n != nil {
		cancel, n.cancel = n.cancel, nil // the node is down from now on
	}
	c.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-n.done
	if err := n.logs.Close(); err != nil {
		c.t.Error(err)
	}
}

func (c *testCluster) node(id int32) *testNode {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[id]
}

func (c *testCluster) setDown(id int32, down bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.down[id] = down
}

func (c *testCluster) isDown(id int32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.nodes[id]
	return c.down[id] || n == nil || n.cancel == nil
}

// partition returns a node's partition, failing if it is not hosted.
func (n *testNode) partition(t testing.TB, tp TopicPartition) *Partition {
	t.Helper()
	p, err := n.m.Partition(tp)
	if err != nil {
		t.Fatalf("node %d: %v", n.id, err)
	}
	return p
}

// produce appends count single-record batches to the leader n, tagged.
func (n *testNode) produce(t testing.TB, tp TopicPartition, acks int16, count int, tag string) {
	t.Helper()
	p := n.partition(t, tp)
	for i := range count {
		b, err := record.Build(record.BatchSpec{BaseTimestamp: time.Now().UnixMilli(), PartitionLeaderEpoch: -1,
			ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
			[]record.Record{{Key: []byte(tag), Value: fmt.Appendf(nil, "%s-%d", tag, i)}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.AppendAsLeader(b, acks); err != nil {
			t.Fatalf("node %d: append %s-%d: %v", n.id, tag, i, err)
		}
	}
}

// segmentBytes returns the concatenated .log files of a node's partition.
func (n *testNode) segmentBytes(t testing.TB, tp TopicPartition) []byte {
	t.Helper()
	dir := filepath.Join(n.dir, tp.String())
	names, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	var out []byte
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	return out
}

// memDialer connects a follower to the leader Manager in memory.
type memDialer struct{ c *testCluster }

var errDown = errors.New("leader unreachable")

func (d memDialer) Dial(_ context.Context, leader int32, ep metadata.Endpoint) (LeaderConn, error) {
	if ep.Port != leader || d.c.isDown(leader) {
		return nil, errDown
	}
	return &memConn{c: d.c, leader: leader, closed: make(chan struct{})}, nil
}

type memConn struct {
	c      *testCluster
	leader int32
	once   sync.Once
	closed chan struct{} // closed by Close: a waiting Fetch returns, as a TCP one does
}

var errConnClosed = errors.New("connection closed")

func (mc *memConn) Close() error {
	mc.once.Do(func() { close(mc.closed) })
	return nil
}

func (mc *memConn) target() (*testNode, error) {
	if mc.c.isDown(mc.leader) {
		return nil, errDown
	}
	return mc.c.node(mc.leader), nil
}

// Fetch serves a follower fetch with the leader's ReadFollowerFetch, the
// code the Kafka Fetch handler runs, waiting up to MaxWaitMillis for
// MinBytes as the handler's purgatory does.
func (mc *memConn) Fetch(ctx context.Context, req *kmsg.FetchRequest) (*kmsg.FetchResponse, error) {
	n, err := mc.target()
	if err != nil {
		return nil, err
	}
	mc.c.mu.Lock()
	mc.c.fetching[req] = true
	mc.c.mu.Unlock()
	defer func() {
		mc.c.mu.Lock()
		delete(mc.c.fetching, req)
		mc.c.mu.Unlock()
	}()
	deadline := time.Now().Add(time.Duration(req.MaxWaitMillis) * time.Millisecond)
	for {
		signal := n.appendSignal()
		resp, bytes, answerNow := n.m.ReadFollowerFetch(req, FetchPeer{Broker: true}, time.Now())
		if h := mc.c.fetchHook; h != nil && h(mc.leader, req, resp) {
			answerNow = true
		}
		if answerNow || bytes >= int(req.MinBytes) || !time.Now().Before(deadline) {
			return resp, nil
		}
		t := time.NewTimer(time.Until(deadline))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-mc.closed:
			t.Stop()
			return nil, errConnClosed
		case <-signal:
		case <-t.C:
		}
		t.Stop()
		if n, err = mc.target(); err != nil {
			return nil, err
		}
	}
}

func (mc *memConn) OffsetForLeaderEpoch(_ context.Context, req *kmsg.OffsetForLeaderEpochRequest) (*kmsg.OffsetForLeaderEpochResponse, error) {
	n, err := mc.target()
	if err != nil {
		return nil, err
	}
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			rp.Partition = p.Partition
			epoch, end, err := n.m.EndOffsetForEpoch(TopicPartition{t.Topic, p.Partition}, p.CurrentLeaderEpoch, p.LeaderEpoch)
			if err != nil {
				rp.ErrorCode = errorCode(err)
			} else {
				rp.LeaderEpoch, rp.EndOffset = epoch, end
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

var ErrOffsetOutOfRangeForTest = storage.ErrOffsetOutOfRange

func errorsIs(err, target error) bool { return errors.Is(err, target) }
