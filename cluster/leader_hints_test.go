package cluster

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/kafkatest"
	"github.com/kbroker/kbroker/internal/testutil"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/replication"
)

// TestLeaderHints (KIP-951): a Produce v10+ or Fetch v12 sent to a
// follower is refused with NOT_LEADER_OR_FOLLOWER and names the leader,
// its epoch and (Produce) its endpoint; Produce v9 has no such fields.
func TestLeaderHints(t *testing.T) {
	nodes := startPair(t)
	leader, follower := nodes[0], nodes[1]
	tp := replication.TopicPartition{Topic: "hints", Partition: 0}
	cl, err := kgo.NewClient(kgo.SeedBrokers(leader.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	createPartitionOn(ctx, t, cl, tp.Topic, 1, 2)
	var epoch int32
	testutil.Eventually(t, 20*time.Second, func() bool {
		part, err := leader.replicas.Partition(tp)
		if err != nil || !part.IsLeader() {
			return false
		}
		epoch = part.State().LeaderEpoch
		p, ok := follower.store.Image().Partition(tp.Topic, tp.Partition)
		return ok && p.Leader == 1
	}, "node 1 to lead and node 2 to know it")
	host, port := splitHostPort(t, leader.addr)

	c := kafkatest.Dial(t, follower.addr)
	for _, version := range []int16{9, 10, 11} {
		req := kafkatest.ProduceRequest(version, -1, tp.Topic, map[int32][]byte{0: testBatch(t, 1, -1, -1, -1)})
		pr := c.RoundTrip(req).(*kmsg.ProduceResponse)
		rp := pr.Topics[0].Partitions[0]
		if rp.ErrorCode != kerr.NotLeaderForPartition.Code {
			t.Fatalf("v%d: error %v, want NOT_LEADER_OR_FOLLOWER", version, kerr.ErrorForCode(rp.ErrorCode))
		}
		wantLeader, wantEpoch, wantBrokers := int32(1), epoch, 1
		if version < 10 {
			wantLeader, wantEpoch, wantBrokers = -1, -1, 0
		}
		if rp.CurrentLeader.LeaderID != wantLeader || rp.CurrentLeader.LeaderEpoch != wantEpoch {
			t.Errorf("v%d: CurrentLeader %+v, want leader %d epoch %d", version, rp.CurrentLeader, wantLeader, wantEpoch)
		}
		if len(pr.Brokers) != wantBrokers {
			t.Fatalf("v%d: NodeEndpoints %+v, want %d", version, pr.Brokers, wantBrokers)
		}
		if wantBrokers == 1 {
			if b := pr.Brokers[0]; b.NodeID != 1 || b.Host != host || b.Port != port {
				t.Errorf("v%d: NodeEndpoints %+v, want node 1 at %s", version, b, leader.addr)
			}
		}
	}

	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version = 12
	fetch.ReplicaID = -1
	fetch.MaxBytes = 1 << 20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = tp.Topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 0, 1<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	fr := c.RoundTrip(fetch).(*kmsg.FetchResponse)
	rp := fr.Topics[0].Partitions[0]
	if rp.ErrorCode != kerr.NotLeaderForPartition.Code || rp.CurrentLeader.LeaderID != 1 || rp.CurrentLeader.LeaderEpoch != epoch {
		t.Errorf("fetch v12: error %v CurrentLeader %+v, want NOT_LEADER_OR_FOLLOWER naming leader 1 epoch %d",
			kerr.ErrorForCode(rp.ErrorCode), rp.CurrentLeader, epoch)
	}
}

func splitHostPort(t *testing.T, addr string) (string, int32) {
	t.Helper()
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return h, int32(port)
}
