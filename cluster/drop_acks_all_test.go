package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/kafkatest"
	"github.com/kbroker/kbroker/internal/testutil"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/replication"
)

// startPair starts two broker+controller nodes forming one quorum, with
// controlled shutdown off so that stopping one leaves the other's ISRs
// alone (the quorum of two is gone with it). sets are extra config
// settings for both nodes.
func startPair(t *testing.T, sets ...string) [2]*testNode {
	t.Helper()
	nodes := startQuorum(t, 2, nil, append([]string{"controlled.shutdown.enable=false", "offsets.topic.replication.factor=1"}, sets...)...)
	return [2]*testNode(nodes)
}

// createPartitionOn creates topic with one partition on the given
// replicas, the first one its preferred leader.
func createPartitionOn(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, replicas ...int32) {
	t.Helper()
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, replicas
	ct.ReplicaAssignment = append(ct.ReplicaAssignment, ra)
	create.Topics = append(create.Topics, ct)
	create.TimeoutMillis = 10_000
	resp, err := create.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].ErrorCode; code != 0 {
		t.Fatalf("create topic %s: %v", topic, kerr.ErrorForCode(code))
	}
}

// A real acks=all produce whose follower has stopped waits in the
// produce purgatory; when its client disconnects the broker closes the
// socket at once and the produce leaves the purgatory, while the batch it
// appended stays in the leader's log.
func TestClientCloseDropsParkedAcksAllProduce(t *testing.T) {
	nodes := startPair(t)
	leader, follower := nodes[0], nodes[1]
	tp := replication.TopicPartition{Topic: "acks-all", Partition: 0}

	// Replicas [1 2]: node 1 leads.
	cl, err := kgo.NewClient(kgo.SeedBrokers(leader.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	createPartitionOn(ctx, t, cl, tp.Topic, 1, 2)
	var part *replication.Partition
	testutil.Eventually(t, 20*time.Second, func() bool {
		part, err = leader.replicas.Partition(tp)
		return err == nil && part.IsLeader() && len(part.State().ISR) == 2
	}, "node 1 to lead with ISR [1 2]")

	// The follower stops without leaving the ISR: nothing can shrink it
	// (no quorum), so acks=all cannot complete.
	follower.stop(t)
	c := kafkatest.Dial(t, leader.addr)
	req := kafkatest.ProduceRequest(9, -1, tp.Topic, map[int32][]byte{0: testBatch(t, 5, -1, -1, -1)})
	req.TimeoutMillis = 60_000
	c.Send(req)
	testutil.Eventually(t, 10*time.Second, func() bool { return leader.produceWaiters.Len() == 1 }, "the produce to park")
	leo := part.LogEndOffset()
	if leo != 5 || part.HighWatermark() != 0 {
		t.Fatalf("log end offset %d high watermark %d, want 5 and 0", leo, part.HighWatermark())
	}
	open := leader.server.OpenConnections()

	c.NC.Close()
	start := time.Now()
	// 20 s is far from the produce's 60 s timeout and leaves room for a
	// loaded machine; the log line below shows the real figure.
	testutil.Eventually(t, 20*time.Second, func() bool { return leader.server.OpenConnections() == open-1 }, "the server to close the socket")
	testutil.Eventually(t, 20*time.Second, func() bool { return leader.produceWaiters.Len() == 0 }, "the produce to leave the purgatory")
	t.Logf("socket closed and produce purgatory emptied %v after the client left (its timeout was 60s)", time.Since(start))
	if got := part.LogEndOffset(); got != leo {
		t.Errorf("log end offset %d after the drop, want %d: the appended batch must stay", got, leo)
	}
}
