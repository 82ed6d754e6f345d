package cluster

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/kafkatest"
	"github.com/kbroker/kbroker/internal/testutil"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/replication"
)

// forgedFollowerFetch is a Fetch that claims to come from broker replica,
// at offset, as a follower in leaderEpoch.
func forgedFollowerFetch(topic string, replica int32, offset int64, leaderEpoch int32) *kmsg.FetchRequest {
	req := fetchRequest(topic, offset, 0, 0)
	req.ReplicaID = replica
	req.Topics[0].Partitions[0].CurrentLeaderEpoch = leaderEpoch
	return req
}

// A client that forges a follower fetch for a fenced replica in the ISR
// must not commit an acks=all produce that no other broker holds.
//
// The controller accepts an explicit assignment only to registered
// brokers, so broker 9 registers (nothing runs behind it) and is fenced
// before the topic is created with replicas [1, 9]: the new partition's
// ISR is [1, 9] and the acks=all produce waits for broker 9. (Kafka's
// controller puts only unfenced brokers in a new partition's ISR, KIP-841;
// ours puts every replica. Should it follow Kafka, a fenced ISR member is
// unreachable here and replication's TestForgedFollowerFetchRefused
// covers the check alone.) A Fetch with
// ReplicaId 9 at the log end offset used to record 9's log end offset and
// move the high watermark, acknowledging the produce with one copy.
//
// The last step is the limit of what the image can tell: once broker 9 is
// unfenced the same forged fetch is a live replica's as far as the leader
// knows, and it commits the produce. Only the connection can tell them
// apart, which is what replication.FetchPeer is for once listeners
// authenticate.
func TestForgedFollowerFetchDoesNotCommit(t *testing.T) {
	// Broker 9 never heartbeats: keep the controller from fencing it on
	// its own while the test unfences it.
	node := startNode(t, "", "broker.session.timeout.ms=120000")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store := node.store
	if err := store.RegisterBroker(ctx, metadata.BrokerRegistration{ID: 9, IncarnationID: "forged",
		Endpoints: []metadata.Endpoint{{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: 1, SecurityProtocol: "PLAINTEXT"}}}); err != nil {
		t.Fatal(err)
	}
	epoch9 := store.Image().Brokers[9].Epoch
	if err := store.FenceBroker(ctx, 9, epoch9); err != nil {
		t.Fatal(err)
	}
	const topic = "forged"
	if errs := store.CreateTopics(ctx, []metadata.TopicSpec{{Name: topic, NumPartitions: -1, ReplicationFactor: -1,
		Assignments: map[int32][]int32{0: {1, 9}}}}, false); errs[0] != nil {
		t.Fatal(errs[0])
	}
	tp := replication.TopicPartition{Topic: topic, Partition: 0}
	var part *replication.Partition
	testutil.Eventually(t, 10*time.Second, func() bool {
		p, err := node.replicas.LeaderPartition(tp)
		if err != nil {
			return false
		}
		part = p
		return slices.Equal(p.State().ISR, []int32{1, 9})
	}, "broker 1 to lead "+topic+" with ISR [1 9]")
	leaderEpoch := part.State().LeaderEpoch

	producer := kafkatest.Dial(t, node.addr)
	produce := kafkatest.ProduceRequest(9, -1, topic, map[int32][]byte{0: testBatch(t, 4, -1, -1, -1)})
	produce.TimeoutMillis = 60_000 // parked until broker 9 has the records
	produceCorr := producer.Send(produce)
	testutil.Eventually(t, 10*time.Second, func() bool { return part.LogEndOffset() == 4 }, "the produce to be appended")

	attacker := kafkatest.Dial(t, node.addr)
	resp := attacker.RoundTrip(forgedFollowerFetch(topic, 9, 4, leaderEpoch)).(*kmsg.FetchResponse)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("forged fetch as fenced broker 9: error %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(code))
	}
	if hw := part.HighWatermark(); hw != 0 {
		t.Fatalf("high watermark %d after the forged fetch, want 0", hw)
	}
	// The fetch handler wakes parked produces synchronously when the high
	// watermark moves, so a response would already be on its way.
	if frame, err := producer.ReadFrame(300 * time.Millisecond); err == nil {
		t.Fatalf("acks=all produce answered (%d bytes) after a forged fetch", len(frame))
	}

	// Control: broker 9 unfenced is, to the image, a live ISR member.
	if err := store.UnfenceBroker(ctx, 9, epoch9); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		resp := attacker.RoundTrip(forgedFollowerFetch(topic, 9, 4, leaderEpoch)).(*kmsg.FetchResponse)
		return resp.Topics[0].Partitions[0].ErrorCode == 0
	}, "a fetch as unfenced broker 9 to be served")
	presp := kmsg.NewPtrProduceResponse()
	presp.Version = produce.Version
	producer.Recv(produceCorr, presp)
	if code := presp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("produce after broker 9 fetched: %v", kerr.ErrorForCode(code))
	}
	if hw := part.HighWatermark(); hw != 4 {
		t.Fatalf("high watermark %d, want 4", hw)
	}
}
