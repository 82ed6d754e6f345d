package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/internal/testutil"
	"github.com/kbroker/kbroker/metadata"
)

// After leadership of a partition moved off its preferred replica,
// kadm's preferred ElectLeaders moves it back; a second election is not
// needed, an election of every partition then lists nothing, an unclean
// election of a led partition is not needed and an unknown partition is
// UNKNOWN_TOPIC_OR_PARTITION.
func TestElectLeadersPreferredAfterLeaderMoved(t *testing.T) {
	nodes := startPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(nodes[0].addr, nodes[1].addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	const topic = "elect"
	creq := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, -1, -1
	for p, replicas := range [][]int32{{1, 2}, {2, 1}} {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(p), replicas
		ct.ReplicaAssignment = append(ct.ReplicaAssignment, a)
	}
	creq.Topics = append(creq.Topics, ct)
	cresp, err := creq.RequestWith(ctx, cl)
	if err != nil || cresp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create topic: %v %+v", err, cresp)
	}

	store := nodes[0].store
	var p0 *metadata.Partition
	testutil.Eventually(t, 10*time.Second, func() bool {
		p, ok := store.Image().Partition(topic, 0)
		p0 = p
		return ok && p.Leader == 1
	}, "partition 0 led by broker 1")
	// Move leadership to broker 2, as a failover would have.
	if err := store.ChangePartition(ctx, metadata.PartitionChange{
		Topic: topic, Partition: 0, Leader: 2, ISR: p0.ISR,
		LeaderEpoch: p0.LeaderEpoch, PartitionEpoch: p0.PartitionEpoch,
	}); err != nil {
		t.Fatal(err)
	}

	res, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{topic: {0: {}, 1: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if r := res[topic][0]; r.Err != nil {
		t.Fatalf("partition 0: %v %s", r.Err, r.ErrMessage)
	}
	if r := res[topic][1]; !errors.Is(r.Err, kerr.ElectionNotNeeded) {
		t.Fatalf("partition 1: got %v, want ELECTION_NOT_NEEDED", r.Err)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return err
		}
		p := md.Topics[topic].Partitions[0]
		if p.Leader != 1 {
			return fmt.Errorf("leader %d, want 1", p.Leader)
		}
		return nil
	}, "clients see broker 1 lead partition 0 again")

	for _, tc := range []struct {
		name string
		how  kadm.ElectLeadersHow
		set  kadm.TopicsSet
		want map[int32]error
	}{
		{"preferred again", kadm.ElectPreferredReplica, kadm.TopicsSet{topic: {0: {}}}, map[int32]error{0: kerr.ElectionNotNeeded}},
		{"unclean with a leader", kadm.ElectLiveReplica, kadm.TopicsSet{topic: {1: {}}}, map[int32]error{1: kerr.ElectionNotNeeded}},
		{"unknown partition", kadm.ElectPreferredReplica, kadm.TopicsSet{topic: {7: {}}}, map[int32]error{7: kerr.UnknownTopicOrPartition}},
		{"all partitions, none needed", kadm.ElectPreferredReplica, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := adm.ElectLeaders(ctx, tc.how, tc.set)
			if err != nil {
				t.Fatal(err)
			}
			got := res[topic]
			if len(got) != len(tc.want) {
				t.Fatalf("results %+v, want %v", res, tc.want)
			}
			for p, want := range tc.want {
				if !errors.Is(got[p].Err, want) {
					t.Fatalf("partition %d: got %v, want %v", p, got[p].Err, want)
				}
			}
		})
	}
}

// A partition named twice is INVALID_REQUEST; an unknown election type
// and a principal without ALTER on the CLUSTER are refused whole.
func TestElectLeadersRefusals(t *testing.T) {
	open := startNode(t, "")
	createTopic(t, open.addr, "t", 1, nil)
	authz := &denyingAuthorizer{
		deny:  map[kmsg.ACLResourceType]string{kmsg.ACLResourceTypeCluster: server.ClusterResourceName},
		calls: map[int16]int{},
	}
	denied := startNodeWith(t, "", func(n *Node) { n.server.SetAuthorizer(authz) })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	client := func(addr string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	cl := client(open.addr)
	send := func(cl *kgo.Client, typ int8, parts ...int32) *kmsg.ElectLeadersResponse {
		t.Helper()
		req := kmsg.NewPtrElectLeadersRequest()
		req.ElectionType = typ
		rt := kmsg.NewElectLeadersRequestTopic()
		rt.Topic, rt.Partitions = "t", parts
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	codes := func(resp *kmsg.ElectLeadersResponse) map[int32]int16 {
		out := map[int32]int16{}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				out[rp.Partition] = rp.ErrorCode
			}
		}
		return out
	}

	resp := send(cl, 0, 0, 0)
	if got := codes(resp); len(got) != 1 || got[0] != kerr.InvalidRequest.Code {
		t.Fatalf("duplicate: %v", got)
	}
	resp = send(cl, 5, 0)
	if resp.ErrorCode != kerr.InvalidRequest.Code || codes(resp)[0] != kerr.InvalidRequest.Code {
		t.Fatalf("unknown election type: top %d, %v", resp.ErrorCode, codes(resp))
	}

	cl = client(denied.addr)
	resp = send(cl, 0, 0)
	if resp.ErrorCode != kerr.ClusterAuthorizationFailed.Code || codes(resp)[0] != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("denied: top %d, %v", resp.ErrorCode, codes(resp))
	}
	if _, err := kadm.NewClient(cl).ElectLeaders(ctx, kadm.ElectPreferredReplica, nil); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("kadm: got %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
}
