package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/kafkatest"
	"github.com/kbroker/kbroker/internal/testutil"
)

// A producer with an open transaction shows in DescribeProducers with the
// first offset of that transaction; once it commits the start offset goes
// back to -1 and the coordinator epoch of the marker is recorded.
func TestDescribeProducersOpenTransaction(t *testing.T) {
	node := startNode(t, "", txnNodeSets...)
	createTopic(t, node.addr, "dp", 1, nil)
	// A plain record first, so the transaction does not start at 0.
	plain, err := kgo.NewClient(kgo.SeedBrokers(node.addr), kgo.DefaultProduceTopic("dp"))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	txnProduce(t, plain, "before")
	p := txnProducer(t, node.addr, "dp-tx", "dp")
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	txnProduce(t, p, "t1", "t2")

	adm := newAdmin(t, node.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pid, epoch, err := p.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	describe := func() kadm.DescribedProducer {
		t.Helper()
		topics, err := adm.DescribeProducers(ctx, kadm.TopicsSet{"dp": {0: {}}})
		if err != nil {
			t.Fatal(err)
		}
		part := topics["dp"].Partitions[0]
		if part.Err != nil {
			t.Fatalf("partition error: %v", part.Err)
		}
		for _, ap := range part.ActiveProducers {
			if ap.ProducerID == pid {
				return ap
			}
		}
		t.Fatalf("producer %d not among %+v", pid, part.ActiveProducers)
		return kadm.DescribedProducer{}
	}
	open := describe()
	if open.ProducerEpoch != epoch || open.LastSequence != 1 || open.CurrentTxnStartOffset != 1 ||
		open.CoordinatorEpoch != -1 || open.LastTimestamp <= 0 {
		t.Errorf("open transaction: %+v, want epoch %d, last sequence 1, txn start 1, coordinator epoch -1, a timestamp", open, epoch)
	}

	endTxn(t, p, kgo.TryCommit)
	var done kadm.DescribedProducer
	testutil.Eventually(t, 10*time.Second, func() bool {
		done = describe()
		return done.CurrentTxnStartOffset == -1
	}, "the commit marker ends the transaction")
	if done.CurrentTxnStartOffset != -1 || done.CoordinatorEpoch < 0 || done.LastSequence != 1 {
		t.Errorf("after commit: %+v, want no transaction, a coordinator epoch, last sequence 1", done)
	}
}

// Partitions the broker cannot answer for get their own error codes.
func TestDescribeProducersErrors(t *testing.T) {
	node := startNode(t, "", txnNodeSets...)
	createTopic(t, node.addr, "dp-err", 1, nil)
	c := kafkatest.Dial(t, node.addr)
	kafkatest.APIVersionsOK(t, c)
	req := kmsg.NewPtrDescribeProducersRequest()
	for _, tc := range []struct {
		topic     string
		partition int32
	}{{"dp-err", 0}, {"dp-err", 3}, {"no-such-topic", 0}} {
		rt := kmsg.NewDescribeProducersRequestTopic()
		rt.Topic, rt.Partitions = tc.topic, []int32{tc.partition}
		req.Topics = append(req.Topics, rt)
	}
	resp := c.RoundTrip(req).(*kmsg.DescribeProducersResponse)
	want := []int16{0, kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicOrPartition.Code}
	if len(resp.Topics) != len(want) {
		t.Fatalf("%d topics answered, want %d", len(resp.Topics), len(want))
	}
	for i, rt := range resp.Topics {
		if len(rt.Partitions) != 1 || rt.Partitions[0].ErrorCode != want[i] {
			t.Errorf("%s: %+v, want error code %d", rt.Topic, rt.Partitions, want[i])
		}
	}
}

// A follower's state is not authoritative: NOT_LEADER_OR_FOLLOWER.
func TestDescribeProducersNotLeader(t *testing.T) {
	if testing.Short() {
		t.Skip("three in-process brokers")
	}
	nodes := startTrio(t)
	adm := newAdmin(t, nodes[0].addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "dp3"); err != nil {
		t.Fatal(err)
	}
	var leader int32 = -1
	testutil.Eventually(t, 20*time.Second, func() bool {
		md, err := adm.Metadata(ctx, "dp3")
		if err == nil && md.Topics["dp3"].Err == nil && len(md.Topics["dp3"].Partitions) == 1 {
			leader = md.Topics["dp3"].Partitions[0].Leader
		}
		return leader >= 0
	}, "dp3 has a leader")
	req := kmsg.NewPtrDescribeProducersRequest()
	rt := kmsg.NewDescribeProducersRequestTopic()
	rt.Topic, rt.Partitions = "dp3", []int32{0}
	req.Topics = append(req.Topics, rt)
	for _, n := range nodes {
		c := kafkatest.Dial(t, n.addr)
		kafkatest.APIVersionsOK(t, c)
		want := kerr.NotLeaderForPartition.Code
		if n.cfg.NodeID == leader {
			want = 0
		}
		// Each broker learns the topic and its role from the metadata
		// log in its own time: poll until its answer settles.
		testutil.Eventually(t, 20*time.Second, func() error {
			resp := c.RoundTrip(req).(*kmsg.DescribeProducersResponse)
			if got := resp.Topics[0].Partitions[0].ErrorCode; got != want {
				return fmt.Errorf("error code %d, want %d", got, want)
			}
			return nil
		}, "broker %d (leader %d)", n.cfg.NodeID, leader)
	}
}
