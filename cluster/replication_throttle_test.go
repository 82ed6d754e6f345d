package cluster

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testutil"
)

// Two partitions with the same backlog on broker 1 are reassigned onto
// broker 2 at once; one is listed in the throttled replica lists and
// leader/follower.replication.throttled.rate is set cluster-wide. The
// throttled one catches up no faster than the rate allows; the other is
// not held back and finishes first.
func TestReplicationThrottleSlowsReassignment(t *testing.T) {
	const (
		rate    = 1 << 20 // bytes per second
		backlog = 5 << 20
	)
	// Two 1 s samples: a new rate's first bytes are spread over one
	// window, so about one second's worth passes before the throttle
	// bites.
	nodes := startPair(t, "replication.quota.window.num=2")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(nodes[0].addr, nodes[1].addr), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	value := make([]byte, 10<<10)
	rand.Read(value)
	for _, topic := range []string{"throttled", "free"} {
		creq := kmsg.NewPtrCreateTopicsRequest()
		ct := kmsg.NewCreateTopicsRequestTopic()
		ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, -1, -1
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = 0, []int32{1}
		ct.ReplicaAssignment = append(ct.ReplicaAssignment, a)
		creq.Topics = append(creq.Topics, ct)
		if cresp, err := creq.RequestWith(ctx, cl); err != nil || cresp.Topics[0].ErrorCode != 0 {
			t.Fatalf("create topic %s: %v %+v", topic, err, cresp)
		}
		var rs []*kgo.Record
		for range backlog / len(value) {
			rs = append(rs, &kgo.Record{Topic: topic, Value: value})
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", topic, err)
		}
	}

	rateStr := fmt.Sprint(rate)
	if res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
		{Name: "leader.replication.throttled.rate", Value: &rateStr},
		{Name: "follower.replication.throttled.rate", Value: &rateStr},
	}); err != nil || res[0].Err != nil {
		t.Fatalf("alter broker configs: %v %+v", err, res)
	}
	leaderList, followerList := "0:1", "0:2"
	if res, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Name: "leader.replication.throttled.replicas", Value: &leaderList},
		{Name: "follower.replication.throttled.replicas", Value: &followerList},
	}, "throttled"); err != nil || res[0].Err != nil {
		t.Fatalf("alter topic configs: %v %+v", err, res)
	}
	for _, n := range nodes {
		testutil.Eventually(t, 30*time.Second, func() error {
			if l, f := n.replicas.ThrottleRates(); l != rate || f != rate {
				return fmt.Errorf("node %d throttles at %d/%d", n.cfg.NodeID, l, f)
			}
			if tc, _ := n.store.Image().Topics["throttled"]; tc == nil || tc.Configs["follower.replication.throttled.replicas"] != followerList {
				return fmt.Errorf("node %d has not applied the topic config", n.cfg.NodeID)
			}
			return nil
		}, "every node applies the throttle")
	}

	req := kadm.AlterPartitionAssignmentsReq{}
	req.Assign("throttled", 0, []int32{1, 2})
	req.Assign("free", 0, []int32{1, 2})
	start := time.Now()
	res, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Error(); err != nil {
		t.Fatal(err)
	}
	done := map[string]time.Duration{}
	testutil.Eventually(t, 90*time.Second, func() error {
		for _, topic := range []string{"throttled", "free"} {
			if _, ok := done[topic]; ok {
				continue
			}
			if p, _ := nodes[0].store.Image().Partition(topic, 0); p != nil && slices.Contains(p.ISR, 2) {
				done[topic] = time.Since(start)
			}
		}
		if len(done) < 2 {
			return fmt.Errorf("caught up so far: %v", done)
		}
		return nil
	}, "both reassignments complete")
	t.Logf("%d MiB backlog: throttled replica caught up in %v (bound %d MiB/s), unthrottled in %v (ratio %.1f)",
		backlog>>20, done["throttled"], rate>>20, done["free"], done["throttled"].Seconds()/done["free"].Seconds())
	// Less than the backlog over the rate, for the first window's
	// allowance and the sample overlapping the window's start.
	if least := time.Duration(float64(backlog-2*rate) / rate * float64(time.Second)); done["throttled"] < least {
		t.Errorf("throttled replica caught up in %v, faster than %d B/s allows (%v)", done["throttled"], rate, least)
	}
	if done["free"] >= done["throttled"] {
		t.Errorf("unthrottled replica (%v) was no faster than the throttled one (%v)", done["free"], done["throttled"])
	}
}
