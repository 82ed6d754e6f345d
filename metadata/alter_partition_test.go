package metadata

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/kbroker/kbroker/metadata/features"
)

// commandsBetween counts the raft log's command entries after index from,
// up to index to.
func commandsBetween(t *testing.T, s *Store, from, to uint64) int {
	t.Helper()
	n := 0
	for i := from + 1; i <= to; i++ {
		var l raft.Log
		if err := s.bolt.GetLog(i, &l); err != nil {
			t.Fatalf("log entry %d: %v", i, err)
		}
		if l.Type == raft.LogCommand {
			n++
		}
	}
	return n
}

// batchTopic creates topic "t" of 6 partitions on brokers 1, 2 and 3, led by
// 1 but partition 3, led by 2.
func batchTopic(ctx context.Context, t *testing.T, s *Store) {
	t.Helper()
	for _, id := range []int32{1, 2, 3} {
		if err := s.RegisterBroker(ctx, BrokerRegistration{ID: id, IncarnationID: "inc", Endpoints: []Endpoint{
			{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: 9090 + id, SecurityProtocol: "PLAINTEXT"}}}); err != nil {
			t.Fatal(err)
		}
	}
	a := map[int32][]int32{}
	for p := range int32(6) {
		a[p] = []int32{1, 2, 3}
	}
	a[3] = []int32{2, 1, 3}
	if errs := s.CreateTopics(ctx, []TopicSpec{{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignments: a}}, false); errs[0] != nil {
		t.Fatal(errs[0])
	}
}

// TestAlterPartitionBatch: one request, one raft entry, each change
// checked alone: the valid ones apply, the others fail with Kafka's
// per-partition errors without failing them.
func TestAlterPartitionBatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s := openReady(t, testConfig(t.TempDir()))
	if mv := s.Image().Features()[features.MetadataVersion]; mv != features.LatestMetadataVersion {
		t.Fatalf("a new cluster is at metadata.version %d", mv)
	}
	batchTopic(ctx, t, s)
	img := s.Image()
	part := func(p int32) *Partition { q, _ := s.Image().Partition("t", p); return q }
	change := func(p int32, isr ...int32) PartitionChange {
		q := part(p)
		return PartitionChange{Topic: "t", Partition: p, Leader: q.Leader, ISR: isr,
			LeaderEpoch: q.LeaderEpoch, PartitionEpoch: q.PartitionEpoch}
	}
	stale := change(1, 1, 2)
	stale.PartitionEpoch--
	fenced := change(2, 1, 2)
	fenced.LeaderEpoch--
	notLed := change(3, 2, 1) // led by 2, sent by 1
	notLed.Leader = 1
	changes := []PartitionChange{
		change(0, 1, 2),
		stale,
		fenced,
		notLed,
		{Topic: "nope", Partition: 0, Leader: 1, ISR: []int32{1}},
		change(0, 1, 3), // t-0 again
		change(4, 1, 4), // 4 is no replica
		change(5, 1),
	}
	want := []error{nil, ErrStalePartitionEpoch, ErrFencedLeaderEpoch, ErrInvalidPartitionChange,
		ErrUnknownTopic, ErrInvalidPartitionChange, ErrInvalidPartitionChange, nil}

	before := s.raft.LastIndex()
	errs, err := s.AlterPartition(ctx, 1, changes)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range want {
		if (w == nil) != (errs[i] == nil) || !errors.Is(errs[i], w) {
			t.Errorf("change %d: %v, want %v", i, errs[i], w)
		}
	}
	if n := commandsBetween(t, s, before, s.raft.LastIndex()); n != 1 {
		t.Fatalf("the batch took %d raft entries, want 1", n)
	}
	if p := part(0); !slices.Equal(p.ISR, []int32{1, 2}) || p.PartitionEpoch != img.Topics["t"].Partitions[0].PartitionEpoch+1 {
		t.Fatalf("t-0 after the batch: %+v", p)
	}
	if p := part(5); !slices.Equal(p.ISR, []int32{1}) {
		t.Fatalf("t-5 after the batch: %+v", p)
	}
	for _, p := range []int32{1, 2, 3, 4} {
		if got, was := part(p), img.Topics["t"].Partitions[p]; got != was {
			t.Fatalf("t-%d changed: %+v, was %+v", p, got, was)
		}
	}

	// Every change refused before raft: nothing is written.
	before = s.raft.LastIndex()
	errs, err = s.AlterPartition(ctx, 1, []PartitionChange{fenced, notLed})
	if err != nil || !errors.Is(errs[0], ErrFencedLeaderEpoch) || !errors.Is(errs[1], ErrInvalidPartitionChange) {
		t.Fatalf("%v %v", errs, err)
	}
	if n := commandsBetween(t, s, before, s.raft.LastIndex()); n != 0 {
		t.Fatalf("a batch refused whole took %d raft entries", n)
	}
}

// TestAlterPartitionForwarded: the per-partition errors of a request a
// follower forwards reach it as the same sentinels, and every node applies
// the batch.
func TestAlterPartitionForwarded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := newTestCluster(t, 3, nil)
	f := c.follower()
	batchTopic(ctx, t, f)
	img := c.converged()
	p0, p1 := img.Topics["t"].Partitions[0], img.Topics["t"].Partitions[1]
	errs, err := f.AlterPartition(ctx, 1, []PartitionChange{
		{Topic: "t", Partition: 0, Leader: 1, ISR: []int32{1, 3}, LeaderEpoch: p0.LeaderEpoch, PartitionEpoch: p0.PartitionEpoch},
		{Topic: "t", Partition: 1, Leader: 1, ISR: []int32{1, 3}, LeaderEpoch: p1.LeaderEpoch, PartitionEpoch: p1.PartitionEpoch + 1},
	})
	if err != nil || errs[0] != nil || !errors.Is(errs[1], ErrStalePartitionEpoch) {
		t.Fatalf("%v %v", errs, err)
	}
	img = c.converged()
	if p := img.Topics["t"].Partitions[0]; !slices.Equal(p.ISR, []int32{1, 3}) {
		t.Fatalf("t-0 on every node: %+v", p)
	}
}

// TestAlterPartitionBelowMetadataVersion3: a cluster at metadata.version 2
// refuses the request (brokers send ChangePartition instead), and its FSM
// rejects a PartitionChangeBatch record whole, as a build that does not
// know the record skips it.
func TestAlterPartitionBelowMetadataVersion3(t *testing.T) {
	bootstrapFeatures = func() map[string]int16 {
		f := features.Bootstrap()
		f[features.MetadataVersion] = features.MetadataVersionFeatureLevels
		return f
	}
	t.Cleanup(func() { bootstrapFeatures = features.Bootstrap })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s := openReady(t, testConfig(t.TempDir()))
	batchTopic(ctx, t, s)
	p, _ := s.Image().Partition("t", 0)
	c := PartitionChange{Topic: "t", Partition: 0, Leader: 1, ISR: []int32{1}, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch}
	if _, err := s.AlterPartition(ctx, 1, []PartitionChange{c}); !errors.Is(err, ErrUnsupportedRecord) {
		t.Fatalf("AlterPartition at metadata.version 2: %v", err)
	}
	img := s.Image()
	rec := &partitionChangeBatchRecord{Changes: []partitionChangeRecord{{TopicID: img.Topics["t"].ID, Partition: 0,
		Leader: 1, ISR: []int32{1}, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch}}}
	next, res := applyEntry(img, img.Offset+1, mustEncode(t, recPartitionChangeBatch, rec))
	if err, _ := res.(error); !errors.Is(err, ErrUnsupportedRecord) || next.Topics["t"] != img.Topics["t"] {
		t.Fatalf("PartitionChangeBatch at metadata.version 2: %v", res)
	}
	if err := s.ChangePartition(ctx, c); err != nil {
		t.Fatal(err)
	}
}

// TestPartitionChangeBatchSharesCopies: the changes of one batch record copy
// the topic maps and each topic once, also when raft applies the entry
// alone (fsm.Apply), and leave the image they were applied to as it was.
func TestPartitionChangeBatchSharesCopies(t *testing.T) {
	topics := []*Topic{{Name: "a", ID: [16]byte{1}}, {Name: "b", ID: [16]byte{2}}}
	for _, tp := range topics {
		for p := range int32(4) {
			tp.Partitions = append(tp.Partitions, &Partition{ID: p, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1})
		}
	}
	img := NewImage([]*Broker{{ID: 1}, {ID: 2}}, topics)
	img.features = features.Bootstrap()
	var rec partitionChangeBatchRecord
	for p := range int32(4) {
		rec.Changes = append(rec.Changes, partitionChangeRecord{TopicID: [16]byte{1}, Partition: p, Leader: 1, ISR: []int32{1}})
	}
	f := newTestFSM()
	f.publish(img)
	res := f.Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: mustEncode(t, recPartitionChangeBatch, &rec)})
	errs, ok := res.([]error)
	if !ok || len(errs) != 4 || slices.ContainsFunc(errs, func(e error) bool { return e != nil }) {
		t.Fatalf("result %v", res)
	}
	next := f.image()
	if next.batch != nil || next.topicsOwner != nil {
		t.Fatal("the published image keeps the batch token")
	}
	for p := range 4 {
		if got := next.Topics["a"].Partitions[p]; !slices.Equal(got.ISR, []int32{1}) || got.PartitionEpoch != 1 {
			t.Fatalf("a-%d: %+v", p, got)
		}
		if got := img.Topics["a"].Partitions[p]; !slices.Equal(got.ISR, []int32{1, 2}) {
			t.Fatalf("the earlier image changed: a-%d %+v", p, got)
		}
	}
	if next.Topics["b"] != img.Topics["b"] || next.TopicsByID[[16]byte{1}] != next.Topics["a"] {
		t.Fatal("topic maps inconsistent")
	}
}
