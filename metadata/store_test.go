package metadata

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// fastRaft shortens raft's timeouts so that a single voter elects itself in
// a few hundred milliseconds.
func fastRaft(c *raft.Config) {
	c.HeartbeatTimeout = 100 * time.Millisecond
	c.ElectionTimeout = 100 * time.Millisecond
	c.LeaderLeaseTimeout = 50 * time.Millisecond
	c.CommitTimeout = 5 * time.Millisecond
}

func testConfig(dir string) Config {
	return Config{
		NodeID:   1,
		Dir:      dir,
		BindAddr: "127.0.0.1:0",
		Logger:   slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		ValidateTopicConfig: func(c map[string]string) error {
			if _, ok := c["bad.key"]; ok {
				return errors.New("bad.key: unknown topic config")
			}
			return nil
		},
		tuneRaft:       fastRaft,
		SessionTimeout: time.Minute, // no test here heartbeats
	}
}

func openReady(t *testing.T, cfg Config) *Store {
	t.Helper()
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestStoreIntegration(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dir := t.TempDir()
	cfg := testConfig(dir)
	s := openReady(t, cfg)
	if !s.bootstrapped {
		t.Fatal("a new directory was not bootstrapped")
	}
	if !s.IsController() || s.ControllerID() != 1 {
		t.Fatalf("controller: %v %d", s.IsController(), s.ControllerID())
	}
	if id := s.Image().ClusterID; len(id) != 22 {
		t.Fatalf("cluster id %q", id)
	}

	ch := s.Changed()
	ep := []Endpoint{{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: 9092, SecurityProtocol: "PLAINTEXT"}}
	if err := s.RegisterBroker(ctx, BrokerRegistration{ID: 1, IncarnationID: "inc-1", Endpoints: ep}); err != nil {
		t.Fatal(err)
	}
	if !closed(ch) {
		t.Fatal("Changed not closed after RegisterBroker")
	}
	if e, ok := s.Image().BrokerEndpoint(1, "PLAINTEXT"); !ok || e != ep[0] {
		t.Fatalf("endpoint %+v %v", e, ok)
	}

	errs := s.CreateTopics(ctx, []TopicSpec{
		{Name: "orders", NumPartitions: 3, ReplicationFactor: 1, Configs: map[string]string{"retention.ms": "60000"}},
		{Name: "bad name", NumPartitions: 1, ReplicationFactor: 1},
		{Name: "wide", NumPartitions: 1, ReplicationFactor: 2},
		{Name: "twice", NumPartitions: 1, ReplicationFactor: 1},
		{Name: "twice", NumPartitions: 1, ReplicationFactor: 1},
		{Name: "conf", NumPartitions: 1, ReplicationFactor: 1, Configs: map[string]string{"bad.key": "x"}},
		{Name: "defaults", NumPartitions: -1, ReplicationFactor: -1},
	}, false)
	want := []error{nil, ErrInvalidTopic, ErrInvalidReplicationFactor, ErrDuplicateTopic, ErrDuplicateTopic, ErrInvalidConfig, nil}
	for i := range want {
		if !errors.Is(errs[i], want[i]) || (errs[i] == nil) != (want[i] == nil) {
			t.Errorf("create %d: got %v, want %v", i, errs[i], want[i])
		}
	}
	if errs := s.CreateTopics(ctx, []TopicSpec{{Name: "orders", NumPartitions: 1, ReplicationFactor: 1}}, false); !errors.Is(errs[0], ErrTopicExists) {
		t.Fatalf("create again: %v", errs[0])
	}
	if errs := s.CreateTopics(ctx, []TopicSpec{{Name: "dry", NumPartitions: 1, ReplicationFactor: 1}}, true); errs[0] != nil {
		t.Fatalf("validate only: %v", errs[0])
	}
	img := s.Image()
	if _, ok := img.Topics["dry"]; ok {
		t.Fatal("validateOnly created the topic")
	}
	orders := img.Topics["orders"]
	if orders == nil || len(orders.Partitions) != 3 || img.TopicsByID[orders.ID] != orders {
		t.Fatalf("orders: %+v", orders)
	}
	if p, ok := img.Partition("orders", 2); !ok || p.Leader != 1 || !reflect.DeepEqual(p.ISR, []int32{1}) {
		t.Fatalf("orders-2: %+v", p)
	}

	first1, n1, err := s.AllocateProducerIDs(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	first2, n2, err := s.AllocateProducerIDs(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if n1 != ProducerIDBlockSize || n2 != ProducerIDBlockSize || first2 < first1+n1 && first1 < first2+n2 {
		t.Fatalf("blocks [%d,+%d) and [%d,+%d) overlap", first1, n1, first2, n2)
	}

	if err := s.AlterTopicConfigs(ctx, "orders", map[string]string{"cleanup.policy": "compact"}, []string{"retention.ms"}); err != nil {
		t.Fatal(err)
	}
	if err := s.AlterTopicConfigs(ctx, "orders", map[string]string{"bad.key": "1"}, nil); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("bad config: %v", err)
	}
	if err := s.AlterTopicConfigs(ctx, "nope", nil, nil); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("unknown topic: %v", err)
	}
	p, _ := s.Image().Partition("orders", 0)
	if err := s.ChangePartition(ctx, PartitionChange{Topic: "orders", Partition: 0, Leader: 1, ISR: []int32{1},
		LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch + 1}); !errors.Is(err, ErrStalePartitionEpoch) {
		t.Fatalf("stale partition change: %v", err)
	}
	if errs := s.DeleteTopics(ctx, []string{"defaults", "nope"}); errs[0] != nil || !errors.Is(errs[1], ErrUnknownTopic) {
		t.Fatalf("delete: %v", errs)
	}

	before := s.Image()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.RegisterBroker(ctx, BrokerRegistration{ID: 2}); err == nil {
		t.Fatal("RegisterBroker after Close succeeded")
	}

	// Reopen: the image comes back from the log, without a new bootstrap.
	s2 := openReady(t, cfg)
	if s2.bootstrapped {
		t.Fatal("re-bootstrapped an existing directory")
	}
	if got := s2.Image(); !sameImage(got, before) {
		t.Fatalf("image after reopen differs:\n got %+v\nwant %+v", got, before)
	}
	first3, _, err := s2.AllocateProducerIDs(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if first3 != max(first1, first2)+ProducerIDBlockSize {
		t.Fatalf("producer ids after reopen start at %d", first3)
	}
}

func TestStoreSnapshotReopen(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dir := t.TempDir()
	cfg := testConfig(dir)
	s := openReady(t, cfg)
	if err := s.RegisterBroker(ctx, BrokerRegistration{ID: 1, IncarnationID: "a"}); err != nil {
		t.Fatal(err)
	}
	if errs := s.CreateTopics(ctx, []TopicSpec{{Name: "snap", NumPartitions: 4, ReplicationFactor: 1}}, false); errs[0] != nil {
		t.Fatal(errs[0])
	}
	if err := s.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	before := s.Image()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if snaps, _ := filepath.Glob(filepath.Join(dir, "snapshots", "*", "state.bin")); len(snaps) == 0 {
		t.Fatal("no snapshot on disk")
	}

	s2, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	// Open restores the snapshot before raft runs: the image is there
	// before any leader exists.
	if got := s2.Image(); !sameImage(got, before) {
		t.Fatalf("image restored from snapshot differs:\n got %+v\nwant %+v", got, before)
	}
	if s2.bootstrapped {
		t.Fatal("re-bootstrapped an existing directory")
	}
	if err := s2.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	if errs := s2.CreateTopics(ctx, []TopicSpec{{Name: "snap", NumPartitions: 1, ReplicationFactor: 1}}, false); !errors.Is(errs[0], ErrTopicExists) {
		t.Fatalf("create after restore: %v", errs[0])
	}
}

// TestStoreNotController: a node that is one of two voters, whose peer
// never answers, bootstraps the two-voter quorum but never elects itself,
// and refuses controller operations once it found no leader for
// noLeaderWait.
func TestStoreNotController(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Voters = []Voter{{ID: 1, Addr: "127.0.0.1:0"}, {ID: 2, Addr: "127.0.0.1:1"}}
	cfg.noLeaderWait = 200 * time.Millisecond
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.bootstrapped || s.IsController() || s.ControllerID() != -1 {
		t.Fatal("a node of a two-voter quorum acted alone")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := s.WaitReady(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitReady: %v", err)
	}
	if err := s.RegisterBroker(context.Background(), BrokerRegistration{ID: 1}); !errors.Is(err, ErrNotController) {
		t.Fatalf("RegisterBroker: %v", err)
	}
	if errs := s.CreateTopics(context.Background(), []TopicSpec{{Name: "x", NumPartitions: 1, ReplicationFactor: 1}}, false); !errors.Is(errs[0], ErrNotController) {
		t.Fatalf("CreateTopics: %v", errs[0])
	}
	if _, _, err := s.AllocateProducerIDs(context.Background(), 1); !errors.Is(err, ErrNotController) {
		t.Fatalf("AllocateProducerIDs: %v", err)
	}
	if s.Image() == nil {
		t.Fatal("nil image")
	}
}

func TestStoreConcurrentProducerIDs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s := openReady(t, testConfig(t.TempDir()))
	const n = 16
	firsts := make(chan int64, n)
	errc := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			first, _, err := s.AllocateProducerIDs(ctx, 1)
			firsts <- first
			errc <- err
		}()
	}
	seen := map[int64]bool{}
	for i := 0; i < n; i++ {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		first := <-firsts
		if seen[first] || first%ProducerIDBlockSize != 0 {
			t.Fatalf("block %d handed out twice or misaligned", first)
		}
		seen[first] = true
	}
	if got := s.Image().NextProducerID; got != n*ProducerIDBlockSize {
		t.Fatalf("next producer id %d", got)
	}
}
