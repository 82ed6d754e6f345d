package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kbroker/kbroker/internal/objstore"
	"github.com/kbroker/kbroker/internal/testutil"
	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/storage/remote"
)

// tieredSets are the broker keys of a tiered cluster on st, with the
// remote log manager and retention checks every 100 ms.
func tieredSets(st *objstore.Store) []string {
	return []string{
		"remote.log.storage.system.enable=true",
		"rsm.config.storage.s3.endpoint.url=" + st.Endpoint,
		"rsm.config.storage.s3.bucket.name=" + st.Bucket,
		"rsm.config.storage.aws.access.key.id=" + st.AccessKey,
		"rsm.config.storage.aws.secret.access.key=" + st.SecretKey,
		"rsm.config.chunk.size=65536",
		"remote.log.manager.task.interval.ms=100",
		"remote.log.manager.task.retry.backoff.ms=100",
		"remote.log.manager.task.retry.backoff.max.ms=500",
		"remote.fetch.max.wait.ms=2000",
		"log.retention.check.interval.ms=100",
		"log.segment.delete.delay.ms=0",
	}
}

// produceValues produces n records value prefix-i to topic with acks=all
// and returns them by offset.
func produceValues(t *testing.T, cl *kgo.Client, topic, prefix string, n int) map[int64]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	acked := map[int64]string{}
	for i := 0; i < n; i += 100 {
		var recs []*kgo.Record
		for j := i; j < min(n, i+100); j++ {
			v := fmt.Sprintf("%s-%05d-%s", prefix, j, strings.Repeat("x", 100))
			recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(v)})
		}
		res := cl.ProduceSync(ctx, recs...)
		if err := res.FirstErr(); err != nil {
			t.Fatalf("produce %s %d: %v", prefix, i, err)
		}
		for _, r := range res {
			acked[r.Record.Offset] = string(r.Record.Value)
		}
	}
	return acked
}

// consumeFrom0 reads partition 0 of topic from offset 0 until it has
// every offset of want, and checks each value.
func consumeFrom0(t *testing.T, addr, topic string, want map[int64]string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}),
		kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	got := map[int64]string{}
	for len(got) < len(want) && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		for _, e := range fs.Errors() {
			if ctx.Err() == nil {
				t.Logf("fetch error: %v", e.Err)
			}
		}
		fs.EachRecord(func(r *kgo.Record) { got[r.Offset] = string(r.Value) })
	}
	for off, v := range want {
		if got[off] != v {
			t.Fatalf("offset %d: acknowledged %.20q, read %.20q (read %d of %d)", off, v, got[off], len(got), len(want))
		}
	}
}

// partitionOn is node n's replica of topic-0.
func partitionOn(t *testing.T, n *testNode, topic string) *replication.Partition {
	t.Helper()
	p, err := n.replicas.Partition(replication.TopicPartition{Topic: topic, Partition: 0})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func leaderOf(t *testing.T, nodes []*testNode, topic string) *testNode {
	t.Helper()
	var leader *testNode
	testutil.Eventually(t, 30*time.Second, func() error {
		for _, n := range nodes {
			if n.cancel == nil {
				continue
			}
			if p, err := n.replicas.Partition(replication.TopicPartition{Topic: topic, Partition: 0}); err == nil && p.IsLeader() {
				leader = n
				return nil
			}
		}
		return fmt.Errorf("no leader of %s-0", topic)
	}, "leader")
	return leader
}

// TestTieredStorage: with remote.storage.enable and a tiny
// local.retention.bytes, early segments leave every broker's disk once
// copied to the store, and a consumer still reads everything from offset
// 0; a leader that died mid-upload leaves a record the next leader
// cleans up; the store stopped does not stop produce, and uploads resume
// when it is back.
func TestTieredStorage(t *testing.T) {
	st := objstore.Start(t)
	nodes := startQuorum(t, 3, nil, tieredSets(st)...)
	const topic = "tiered"
	cl, err := kgo.NewClient(kgo.SeedBrokers(nodes[0].addr), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{
		"remote.storage.enable": ptr("true"), "segment.bytes": ptr("16384"), "local.retention.bytes": ptr("1"),
		"min.insync.replicas": ptr("2"),
	}, topic)
	if err != nil || res.Err != nil {
		t.Fatalf("create topic: %v %v", err, res.Err)
	}
	acked := produceValues(t, cl, topic, "a", 1500)

	// Every replica drops its early segments once they are copied.
	testutil.Eventually(t, 60*time.Second, func() error {
		for _, n := range nodes {
			p := partitionOn(t, n, topic)
			if p.LocalLogStartOffset() < 500 {
				return fmt.Errorf("node %d: local log start %d", n.cfg.NodeID, p.LocalLogStartOffset())
			}
		}
		return nil
	}, "local segments deleted after the copy")
	leader := leaderOf(t, nodes, topic)
	lp := partitionOn(t, leader, topic)
	if lp.LogStartOffset() != 0 {
		t.Fatalf("log start %d with remote storage, want 0", lp.LogStartOffset())
	}
	offs, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := offs.Lookup(topic, 0); o.Err != nil || o.Offset != 0 {
		t.Fatalf("earliest: %+v", o)
	}
	consumeFrom0(t, nodes[0].addr, topic, acked)

	// A leader dies mid-upload: its COPY_SEGMENT_STARTED record and an
	// object are left behind. Simulated exactly: the record and one
	// object written as the leader would, then the leader stops.
	img := leader.store.Image()
	tp := img.Topics[topic]
	mp := tp.Partitions[0]
	orphan := metadata.RemoteSegment{ID: remote.NewSegmentID(), BaseOffset: 2000, EndOffset: 2099, Size: 100,
		Broker: mp.Leader, LeaderEpoch: mp.LeaderEpoch, State: metadata.RemoteCopyStarted}
	if err := leader.store.PutRemoteSegment(ctx, metadata.RemotePartition{TopicID: tp.ID, Partition: 0}, orphan); err != nil {
		t.Fatal(err)
	}
	orphanSeg := remote.Segment{Topic: topic, TopicID: tp.ID, Partition: 0, ID: orphan.ID, BaseOffset: orphan.BaseOffset, EndOffset: orphan.EndOffset}
	if _, err := st.Client().PutObject(ctx, putObject(st.Bucket, remote.Key(orphanSeg, remote.FileOffsetIndex))); err != nil {
		t.Fatal(err)
	}
	leader.stop(t)
	var alive []*testNode
	for _, n := range nodes {
		if n != leader {
			alive = append(alive, n)
		}
	}
	newLeader := leaderOf(t, alive, topic)
	testutil.Eventually(t, 60*time.Second, func() error {
		for _, s := range newLeader.store.Image().RemoteSegments(tp.ID, 0) {
			if s.ID == orphan.ID {
				return fmt.Errorf("the abandoned upload is still %v", s.State)
			}
		}
		keys, err := st.Objects(ctx, remote.Key(orphanSeg, remote.FileOffsetIndex))
		if err != nil || len(keys) > 0 {
			return fmt.Errorf("abandoned objects %v: %w", keys, err)
		}
		return nil
	}, "the new leader cleans up the abandoned upload")

	cl2, err := kgo.NewClient(kgo.SeedBrokers(alive[0].addr), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	for off, v := range produceValues(t, cl2, topic, "b", 500) {
		acked[off] = v
	}

	// The store stops: produce goes on, and copies resume when it is back.
	st.Stop()
	for off, v := range produceValues(t, cl2, topic, "c", 500) {
		acked[off] = v
	}
	np := partitionOn(t, newLeader, topic)
	stalled := np.Log().RemoteCopiedOffset()
	st.Restart()
	testutil.Eventually(t, 60*time.Second, func() error {
		if c := np.Log().RemoteCopiedOffset(); c <= stalled || c < 2000 {
			return fmt.Errorf("copied up to %d (%d with the store down)", c, stalled)
		}
		return nil
	}, "copies resume after the outage")
	consumeFrom0(t, alive[0].addr, topic, acked)
}

func putObject(bucket, key string) *s3.PutObjectInput {
	return &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader("partial")}
}
