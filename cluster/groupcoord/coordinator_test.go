package groupcoord

// Unit tests of the group coordinator against a fake host: a metadata
// image built by hand and in-memory replicas of __consumer_offsets whose
// high watermark the test moves.

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/testutil"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/coordinator"
	"github.com/kbroker/kbroker/cluster/group"
	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/storage"
	"github.com/kbroker/kbroker/wire/record"
)

// fakeReplica is an in-memory replica of one __consumer_offsets
// partition. With replicate set, every append is replicated at once (a
// one-replica ISR); otherwise the high watermark moves only on replicate().
type fakeReplica struct {
	mu        sync.Mutex
	leader    bool
	epoch     int32
	replicate bool
	logStart  int64
	batches   []record.Batch
	leo, hw   int64
}

func (r *fakeReplica) IsLeader() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.leader
}

func (r *fakeReplica) LeaderEpoch() int32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.epoch
}

func (r *fakeReplica) LogStartOffset() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.logStart
}

func (r *fakeReplica) LogEndOffset() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.leo
}

func (r *fakeReplica) HighWatermark() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hw
}

func (r *fakeReplica) ReadLog(offset int64, maxBytes int, upperBound int64) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if offset < r.logStart || offset > r.leo {
		return nil, storage.ErrOffsetOutOfRange
	}
	var out []byte
	for _, b := range r.batches {
		if b.LastOffset() < offset || b.BaseOffset() >= upperBound {
			continue
		}
		if len(out) > 0 && len(out)+len(b) > maxBytes {
			break
		}
		out = append(out, b...)
	}
	return out, nil
}

func (r *fakeReplica) AppendAsLeader(b record.Batch) (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.leader {
		return -1, replication.ErrNotLeader
	}
	return r.appendLocked(b), nil
}

// write appends b whatever the role: the log as a previous leader left it.
func (r *fakeReplica) write(b record.Batch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.appendLocked(b)
	r.hw = r.leo
}

func (r *fakeReplica) appendLocked(b record.Batch) int64 {
	b = append(record.Batch(nil), b...)
	b.SetBaseOffset(r.leo)
	r.batches = append(r.batches, b)
	r.leo = b.LastOffset() + 1
	if r.replicate {
		r.hw = r.leo
	}
	return b.LastOffset()
}

// replicateAll moves the high watermark to the log end.
func (r *fakeReplica) replicateAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hw = r.leo
}

func (r *fakeReplica) setReplicate(on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.replicate = on
}

func (r *fakeReplica) setRole(leader bool, epoch int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.leader, r.epoch = leader, epoch
}

// fakeGroupsHost is a one-broker cluster (broker 1) whose
// __consumer_offsets replicas are fakeReplicas.
type fakeGroupsHost struct {
	mu       sync.Mutex
	img      *metadata.Image
	replicas map[int32]*fakeReplica
	created  []metadata.TopicSpec
}

func newFakeGroupsHost() *fakeGroupsHost {
	return &fakeGroupsHost{
		img: &metadata.Image{
			Brokers: map[int32]*metadata.Broker{1: {ID: 1, Endpoints: []metadata.Endpoint{
				{Listener: "PLAINTEXT", Host: "broker1", Port: 9092},
			}}},
			Topics: map[string]*metadata.Topic{},
		},
		replicas: map[int32]*fakeReplica{},
	}
}

func (h *fakeGroupsHost) Image() *metadata.Image {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.img
}

func (h *fakeGroupsHost) OffsetsReplica(p int32) (coordinator.OffsetsReplica, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r, ok := h.replicas[p]
	if !ok {
		return nil, replication.ErrUnknownTopicOrPartition
	}
	return r, nil
}

func (h *fakeGroupsHost) CreateOffsetsTopic(_ context.Context, spec metadata.TopicSpec) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.created = append(h.created, spec)
	h.addTopicLocked(spec.NumPartitions)
	return nil
}

// addTopic gives the image a __consumer_offsets of n partitions led by
// broker 1, with a follower replica of each here.
func (h *fakeGroupsHost) addTopic(n int32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.addTopicLocked(n)
}

func (h *fakeGroupsHost) addTopicLocked(n int32) {
	t := &metadata.Topic{Name: OffsetsTopic}
	for p := range n {
		t.Partitions = append(t.Partitions, &metadata.Partition{ID: p, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1})
		if h.replicas[p] == nil {
			h.replicas[p] = &fakeReplica{replicate: true}
		}
	}
	img := *h.img
	img.Topics = map[string]*metadata.Topic{OffsetsTopic: t}
	h.img = &img
}

func (h *fakeGroupsHost) replica(p int32) *fakeReplica {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.replicas[p]
}

// startCoordinator runs a coordinator on host until the test ends.
func startCoordinator(t *testing.T, host Host, cfg Config) *Coordinator {
	t.Helper()
	c := New(host, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		c.Close()
	})
	return c
}

var testConfig = Config{
	OffsetsTopicNumPartitions:     1,
	OffsetsTopicReplicationFactor: 3,
	OffsetsRetention:              time.Hour,
}

// lead makes this broker leader of partition p in epoch and tells c.
func lead(c *Coordinator, r *fakeReplica, p, epoch int32) {
	r.setRole(true, epoch)
	c.OnRoleChange(replication.TopicPartition{Topic: OffsetsTopic, Partition: p})
}

// waitLoaded waits until c answers for groupID.
func waitLoaded(t *testing.T, c *Coordinator, groupID string) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, func() bool {
		_, err := c.FetchOffsets(groupID, nil, nil)
		return err == nil
	}, "the coordinator to load")
}

// commitResult collects the errors of a CommitOffsets.
type commitResult struct {
	mu   sync.Mutex
	errs []error
	n    int
}

func (r *commitResult) done(errs []error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = errs
	r.n++
}

func (r *commitResult) get() ([]error, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.errs, r.n
}

func fetchOne(t *testing.T, c *Coordinator, groupID string, tp group.TopicPartition) group.Offset {
	t.Helper()
	got, err := c.FetchOffsets(groupID, map[string][]int32{tp.Topic: {tp.Partition}}, []string{tp.Topic})
	if err != nil {
		t.Fatalf("fetchOffsets(%s): %v", groupID, err)
	}
	return got[0].Partitions[0].Offset
}

func TestCoordinatorCommitThenFetch(t *testing.T) {
	host := newFakeGroupsHost()
	host.addTopic(1)
	c := startCoordinator(t, host, testConfig)
	r := host.replica(0)
	lead(c, r, 0, 1)
	waitLoaded(t, c, "g")

	tp0, tp1 := group.TopicPartition{Topic: "t", Partition: 0}, group.TopicPartition{Topic: "t", Partition: 1}
	var res commitResult
	c.CommitOffsets("g", CommitMember{Generation: -1}, []PartitionOffset{
		{TP: tp0, Offset: 42, LeaderEpoch: 3, Metadata: "md"},
		{TP: tp1, Offset: 7, LeaderEpoch: -1, Metadata: strings.Repeat("x", offsetMetadataMaxBytes+1)},
	}, res.done)
	errs, n := res.get()
	if n != 1 || errs[0] != nil || !errors.Is(errs[1], kerr.OffsetMetadataTooLarge) {
		t.Fatalf("commit answered %d times with %v, want once with [nil OFFSET_METADATA_TOO_LARGE]", n, errs)
	}
	if o := fetchOne(t, c, "g", tp0); o.Offset != 42 || o.LeaderEpoch != 3 || o.Metadata != "md" {
		t.Fatalf("fetched %+v", o)
	}
	if o := fetchOne(t, c, "g", tp1); o.Offset != -1 {
		t.Fatalf("the refused offset was stored: %+v", o)
	}
	// One batch with one record went to the log.
	if r.LogEndOffset() != 1 {
		t.Fatalf("log end offset %d, want 1", r.LogEndOffset())
	}

	// A member of no generation cannot commit to a group that does not exist.
	var res2 commitResult
	c.CommitOffsets("other", CommitMember{MemberID: "m", Generation: 3}, []PartitionOffset{{TP: tp0, Offset: 1}}, res2.done)
	if errs, _ := res2.get(); !errors.Is(errs[0], kerr.IllegalGeneration) {
		t.Fatalf("commit of a member to an unknown group: %v", errs)
	}
}

func TestCoordinatorCommitAcknowledgedWhenReplicated(t *testing.T) {
	host := newFakeGroupsHost()
	host.addTopic(1)
	r := host.replica(0)
	r.setReplicate(false)
	c := startCoordinator(t, host, testConfig)
	lead(c, r, 0, 1)
	waitLoaded(t, c, "g")

	tp := group.TopicPartition{Topic: "t", Partition: 0}
	var res commitResult
	c.CommitOffsets("g", CommitMember{Generation: -1}, []PartitionOffset{{TP: tp, Offset: 5, LeaderEpoch: -1}}, res.done)
	if _, n := res.get(); n != 0 {
		t.Fatal("the commit was acknowledged before the high watermark passed it")
	}
	if o := fetchOne(t, c, "g", tp); o.Offset != -1 {
		t.Fatalf("an unreplicated offset is visible: %+v", o)
	}
	r.replicateAll()
	c.OnHighWatermark(replication.TopicPartition{Topic: OffsetsTopic, Partition: 0})
	if errs, n := res.get(); n != 1 || errs[0] != nil {
		t.Fatalf("after replication: answered %d times with %v", n, errs)
	}
	if o := fetchOne(t, c, "g", tp); o.Offset != 5 {
		t.Fatalf("fetched %+v after replication", o)
	}

	// A write waiting when leadership moves fails with NOT_COORDINATOR,
	// and the coordinator stops answering for the partition.
	var res2 commitResult
	c.CommitOffsets("g", CommitMember{Generation: -1}, []PartitionOffset{{TP: tp, Offset: 6, LeaderEpoch: -1}}, res2.done)
	r.setRole(false, 2)
	c.OnRoleChange(replication.TopicPartition{Topic: OffsetsTopic, Partition: 0})
	if errs, n := res2.get(); n != 1 || !errors.Is(errs[0], kerr.NotCoordinator) {
		t.Fatalf("pending commit after losing leadership: answered %d times with %v", n, errs)
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		_, err := c.FetchOffsets("g", nil, nil)
		return errors.Is(err, kerr.NotCoordinator)
	}, "NOT_COORDINATOR after losing leadership")
}

func TestCoordinatorNotCoordinatorWhenNotLeader(t *testing.T) {
	host := newFakeGroupsHost()
	host.addTopic(1)
	c := startCoordinator(t, host, testConfig)
	// The replica follows: none of the requests is served here.
	c.OnRoleChange(replication.TopicPartition{Topic: OffsetsTopic, Partition: 0})

	var joined *group.JoinResult
	c.Join("g", group.JoinRequest{ProtocolType: "consumer", Protocols: []group.Protocol{{Name: "range"}}, SessionTimeout: time.Second},
		func(r group.JoinResult) { joined = &r })
	if joined == nil || !errors.Is(joined.Err, kerr.NotCoordinator) {
		t.Fatalf("join: %+v", joined)
	}
	var synced *group.SyncResult
	c.SyncGroup("g", group.SyncRequest{MemberID: "m"}, func(r group.SyncResult) { synced = &r })
	if synced == nil || !errors.Is(synced.Err, kerr.NotCoordinator) {
		t.Fatalf("sync: %+v", synced)
	}
	if err := c.Heartbeat("g", "m", "", 1); !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("heartbeat: %v", err)
	}
	if _, err := c.Leave("g", []group.LeaveMember{{MemberID: "m"}}); !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("leave: %v", err)
	}
	if _, err := c.Describe("g"); !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("describe: %v", err)
	}
	var res commitResult
	c.CommitOffsets("g", CommitMember{Generation: -1}, []PartitionOffset{{TP: group.TopicPartition{Topic: "t"}, Offset: 1}}, res.done)
	if errs, _ := res.get(); !errors.Is(errs[0], kerr.NotCoordinator) {
		t.Fatalf("commit: %v", errs)
	}
	var delErrs []error
	c.DeleteGroups([]string{"g", ""}, func(errs []error) { delErrs = errs })
	if !errors.Is(delErrs[0], kerr.NotCoordinator) || !errors.Is(delErrs[1], kerr.InvalidGroupID) {
		t.Fatalf("delete: %v", delErrs)
	}
	if r := host.replica(0); r.LogEndOffset() != 0 {
		t.Fatalf("a follower's coordinator wrote %d records", r.LogEndOffset())
	}
}

// batchOf is one batch of __consumer_offsets records.
func batchOf(t *testing.T, recs ...record.Record) record.Batch {
	t.Helper()
	for i := range recs {
		recs[i].OffsetDelta = int32(i)
	}
	b, err := record.Build(record.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCoordinatorLoadsOnBecomingLeader(t *testing.T) {
	host := newFakeGroupsHost()
	host.addTopic(1)
	r := host.replica(0)
	tp := group.TopicPartition{Topic: "t", Partition: 0}
	offsetRec := func(g string, off int64) record.Record {
		return record.Record{Key: group.OffsetKey(g, tp), Value: group.OffsetValue(group.Offset{Offset: off, LeaderEpoch: -1, CommitTimestamp: time.Now().UnixMilli()})}
	}
	md := kmsg.NewGroupMetadataValue()
	md.Version = 3
	md.ProtocolType = "consumer"
	md.Generation = 4
	// What a previous leader wrote: "a" committed twice, "b" committed and
	// deleted its offset, "c" is an Empty consumer group with an offset.
	r.write(batchOf(t, offsetRec("a", 5), offsetRec("b", 3)))
	r.write(batchOf(t, offsetRec("a", 9), record.Record{Key: group.OffsetKey("b", tp)}))
	r.write(batchOf(t, record.Record{Key: group.GroupKey("c"), Value: md.AppendTo(nil)}, offsetRec("c", 11)))

	c := startCoordinator(t, host, testConfig)
	c.OnRoleChange(replication.TopicPartition{Topic: OffsetsTopic, Partition: 0})
	if _, err := c.FetchOffsets("a", nil, nil); !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("fetch as a follower: %v", err)
	}
	lead(c, r, 0, 1)
	waitLoaded(t, c, "a")
	for _, tt := range []struct {
		group string
		want  int64
	}{{"a", 9}, {"b", -1}, {"c", 11}} {
		if o := fetchOne(t, c, tt.group, tp); o.Offset != tt.want {
			t.Errorf("group %s: offset %d, want %d", tt.group, o.Offset, tt.want)
		}
	}
	s, err := c.Describe("c")
	if err != nil || s.State != "Empty" || s.ProtocolType != "consumer" {
		t.Fatalf("describe c: %+v %v", s, err)
	}
	var ids []string
	for _, g := range c.List() {
		ids = append(ids, g.ID)
	}
	if strings.Join(ids, ",") != "a,c" {
		t.Fatalf("listed %v, want a and c (b has no offsets left)", ids)
	}
}

func TestCoordinatorGroupLifecycle(t *testing.T) {
	host := newFakeGroupsHost()
	host.addTopic(1)
	r := host.replica(0)
	c := startCoordinator(t, host, testConfig)
	lead(c, r, 0, 1)
	waitLoaded(t, c, "g")

	// One member joins (no KIP-394 round, no initial delay) and syncs as
	// leader; its assignment is stored before it is answered.
	var joined *group.JoinResult
	c.Join("g", group.JoinRequest{
		ProtocolType: "consumer", Protocols: []group.Protocol{{Name: "range", Metadata: []byte("sub")}},
		SessionTimeout: 10 * time.Second, RebalanceTimeout: 10 * time.Second,
	}, func(res group.JoinResult) { joined = &res })
	if joined == nil || joined.Err != nil || joined.LeaderID != joined.MemberID {
		t.Fatalf("join: %+v", joined)
	}
	r.setReplicate(false)
	var synced *group.SyncResult
	c.SyncGroup("g", group.SyncRequest{
		MemberID: joined.MemberID, Generation: joined.Generation,
		Assignments: map[string][]byte{joined.MemberID: []byte("assigned")},
	}, func(res group.SyncResult) { synced = &res })
	if synced != nil {
		t.Fatalf("sync answered before its assignment was replicated: %+v", synced)
	}
	r.replicateAll()
	c.OnHighWatermark(replication.TopicPartition{Topic: OffsetsTopic, Partition: 0})
	if synced == nil || synced.Err != nil || string(synced.Assignment) != "assigned" {
		t.Fatalf("sync: %+v", synced)
	}
	r.setReplicate(true)
	if err := c.Heartbeat("g", joined.MemberID, "", joined.Generation); err != nil {
		t.Fatalf("heartbeat: %v", err)
	}
	s, err := c.Describe("g")
	if err != nil || s.State != "Stable" || s.Protocol != "range" || len(s.Members) != 1 || string(s.Members[0].Assignment) != "assigned" {
		t.Fatalf("describe the stable group: %+v %v", s, err)
	}

	// The group is not empty yet.
	var delErrs []error
	c.DeleteGroups([]string{"g"}, func(errs []error) { delErrs = errs })
	if !errors.Is(delErrs[0], kerr.NonEmptyGroup) {
		t.Fatalf("delete of a stable group: %v", delErrs)
	}

	// The last member leaves: the group is Empty and, as in Kafka, keeps
	// its protocol type.
	errs, err := c.Leave("g", []group.LeaveMember{{MemberID: joined.MemberID}})
	if err != nil || errs[0] != nil {
		t.Fatalf("leave: %v %v", errs, err)
	}
	s, _ = c.Describe("g")
	if s.State != "Empty" || s.ProtocolType != "consumer" || s.Protocol != "" {
		t.Fatalf("describe the empty group: %+v", s)
	}
	if l := c.List(); len(l) != 1 || l[0] != (GroupOverview{ID: "g", ProtocolType: "consumer", State: "Empty", Type: "classic"}) {
		t.Fatalf("list: %+v", l)
	}

	delErrs = nil
	c.DeleteGroups([]string{"g", "g"}, func(errs []error) { delErrs = errs })
	if delErrs[0] != nil || !errors.Is(delErrs[1], kerr.GroupIDNotFound) {
		t.Fatalf("delete: %v", delErrs)
	}
	if s, _ := c.Describe("g"); s.State != "Dead" {
		t.Fatalf("describe after delete: %+v", s)
	}
}

func TestCoordinatorCreatesOffsetsTopic(t *testing.T) {
	host := newFakeGroupsHost()
	c := startCoordinator(t, host, Config{OffsetsTopicNumPartitions: 3, OffsetsTopicReplicationFactor: 3})
	id, ep, err := c.topic.CoordinatorFor(context.Background(), "g", "PLAINTEXT")
	if err != nil || id != 1 || ep.Host != "broker1" || ep.Port != 9092 {
		t.Fatalf("coordinatorFor: %d %+v %v", id, ep, err)
	}
	if _, _, err := c.topic.CoordinatorFor(context.Background(), "g", "PLAINTEXT"); err != nil {
		t.Fatal(err)
	}
	// Created once, with the replication factor capped at the one live
	// broker, compacted.
	if len(host.created) != 1 {
		t.Fatalf("created %d times", len(host.created))
	}
	spec := host.created[0]
	if spec.NumPartitions != 3 || spec.ReplicationFactor != 1 || spec.Configs["cleanup.policy"] != "compact" {
		t.Fatalf("created %+v", spec)
	}
	if _, _, err := c.topic.CoordinatorFor(context.Background(), "g", "OTHER"); !errors.Is(err, kerr.CoordinatorNotAvailable) {
		t.Fatalf("unknown listener: %v", err)
	}
}
