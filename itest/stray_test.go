package itest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testutil"
)

// TestStrayLogsAfterRestart: a broker that was down while it stopped
// being a replica of a partition (reassigned away, or its topic deleted)
// finds the partition's log on disk when it starts. As Kafka (KAFKA-14616,
// 3.7), the replica manager removes such stray logs at its first image
// after the start (replication stray.go), and a topic created again under
// the same name starts empty on that broker (the log's partition.metadata
// names the old topic id). The same holds for a replica reassigned away
// while its broker is down.
func TestStrayLogsAfterRestart(t *testing.T) {
	c := startCluster(t, 3)
	keepLogs(t, c)
	topic := topicName(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl := clusterClient(t, c, producerOpts()...)
	adm := kadm.NewClient(cl)
	create := func() {
		t.Helper()
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = 0, []int32{3, 1, 2} // 3 preferred leader
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
		req.Topics = append(req.Topics, rt)
		testutil.Eventually(t, 30*time.Second, func() error {
			resp, err := req.RequestWith(ctx, cl)
			if err == nil && resp.Topics[0].ErrorCode != 0 {
				err = fmt.Errorf("CreateTopics %s: error %d", topic, resp.Topics[0].ErrorCode)
			}
			return err
		}, "creating %s", topic)
		c.waitConverged(30*time.Second, topic+" led by 3 with full ISR", allLedBy(topic, 1, 3, []int32{1, 2, 3}))
	}
	create()
	var old []*kgo.Record
	for i := range 100 {
		old = append(old, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "old-%03d", i)})
	}
	if err := cl.ProduceSync(ctx, old...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// Deleted while broker 3 is down; broker 3 starts again.
	c.node(3).stop()
	if _, err := adm.DeleteTopics(ctx, topic); err != nil {
		t.Fatal(err)
	}
	c.waitConverged(30*time.Second, topic+" gone", func(m *kmsg.MetadataResponse) bool { return len(partStates(m, topic)) == 0 })
	c.node(3).start()
	c.waitConverged(30*time.Second, "3 brokers", func(m *kmsg.MetadataResponse) bool { return len(m.Brokers) == 3 })
	stray := testutil.Poll(ctx, 10*time.Second, func() error {
		if ds := topicDirs(t, c.node(3).dir, topic); len(ds) > 0 {
			return fmt.Errorf("broker 3 keeps %v of the deleted topic", ds)
		}
		return nil
	})
	if stray != nil {
		t.Error(stray)
	}

	// Created again with broker 3 as its leader: it must start empty.
	create()
	got := consumeAll(t, c.node(1), topic)
	for _, r := range got[0] {
		if strings.HasPrefix(r.Value, "old-") {
			t.Fatalf("the new %s serves the deleted topic's record %q at offset %d (%d records)", topic, r.Value, r.Offset, len(got[0]))
		}
	}

	// Reassigned away from broker 3 while it is down: when it starts, it
	// removes its replica's log.
	if ds := topicDirs(t, c.node(3).dir, topic); len(ds) != 1 {
		t.Fatalf("broker 3 holds %v of the new topic", ds)
	}
	c.node(3).stop()
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(topic, 0, []int32{1, 2})
	testutil.Eventually(t, 30*time.Second, func() error {
		res, err := adm.AlterPartitionAssignments(ctx, req)
		if err == nil {
			err = res.Error()
		}
		return err
	}, "reassigning %s-0 to [1 2]", topic)
	c.waitConverged(30*time.Second, topic+" on 1 and 2 only", func(m *kmsg.MetadataResponse) bool {
		ps := partStates(m, topic)
		return len(ps) == 1 && ps[0].ErrorCode == 0 && len(ps[0].Replicas) == 2 && !slices.Contains(ps[0].Replicas, 3)
	})
	c.node(3).start()
	c.waitConverged(30*time.Second, "3 brokers", func(m *kmsg.MetadataResponse) bool { return len(m.Brokers) == 3 })
	if err := testutil.Poll(ctx, 10*time.Second, func() error {
		if ds := topicDirs(t, c.node(3).dir, topic); len(ds) > 0 {
			return fmt.Errorf("broker 3 keeps %v, reassigned away while it was down", ds)
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
}
