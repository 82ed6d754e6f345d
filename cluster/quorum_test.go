package cluster

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/internal/testutil"
)

// startObserver starts node id with the controller role but outside the
// voters of nodes' quorum: it follows the metadata log as an observer.
func startObserver(t *testing.T, nodes []*testNode, id int32) *testNode {
	t.Helper()
	var voters []string
	for _, v := range nodes[0].cfg.ControllerQuorumVoters {
		voters = append(voters, fmt.Sprintf("%d@%s", v.ID, v.Addr()))
	}
	cfg, err := config.Load("", nil, []string{
		"node.id=" + strconv.Itoa(int(id)),
		"listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"controller.quorum.voters=" + strings.Join(voters, ","),
		"log.dirs=" + t.TempDir(),
		"offsets.topic.replication.factor=1",
	})
	if err != nil {
		t.Fatal(err)
	}
	node, err := NewNode(cfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tn := &testNode{Node: node, cancel: cancel, done: make(chan error, 1)}
	go func() { tn.done <- node.Run(ctx) }()
	t.Cleanup(func() { tn.stop(t) })
	select {
	case <-tn.Ready():
	case err := <-tn.done:
		t.Fatalf("node %d exited before ready: %v", id, err)
	case <-time.After(30 * time.Second):
		t.Fatalf("node %d not ready after 30s", id)
	}
	tn.addr, _ = tn.Addr("PLAINTEXT")
	return tn
}

func describeQuorum(ctx context.Context, cl *kgo.Client) (*kmsg.DescribeQuorumResponse, error) {
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rp := kmsg.NewDescribeQuorumRequestTopicPartition()
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req.RequestWith(ctx, cl)
}

func replicaStateIDs(rs []kmsg.DescribeQuorumResponseTopicPartitionReplicaState) []int32 {
	var out []int32
	for _, r := range rs {
		out = append(out, r.ReplicaID)
	}
	slices.Sort(out)
	return out
}

// waitQuorum waits until DescribeQuorum shows the voters and observers
// given and returns the answer.
func waitQuorum(t *testing.T, cl *kgo.Client, voters, observers []int32) *kmsg.DescribeQuorumResponse {
	t.Helper()
	var resp *kmsg.DescribeQuorumResponse
	testutil.Eventually(t, 20*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var err error
		if resp, err = describeQuorum(ctx, cl); err != nil {
			return err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return err
		}
		p := resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			return err
		}
		if got := replicaStateIDs(p.CurrentVoters); !slices.Equal(got, voters) {
			return fmt.Errorf("voters %v", got)
		}
		if got := replicaStateIDs(p.Observers); !slices.Equal(got, observers) {
			return fmt.Errorf("observers %v", got)
		}
		return nil
	}, "quorum voters %v observers %v", voters, observers)
	return resp
}

// DescribeQuorum, AddRaftVoter and RemoveRaftVoter through franz-go on a
// 3-voter cluster with a fourth controller node started outside the
// voters: it is an observer, becomes a voter, the active controller is
// removed (leadership moves), the removed node keeps serving as a broker
// and is an observer; and the error codes of Kafka's handlers.
func TestQuorumAPIs(t *testing.T) {
	nodes := startQuorum(t, 3, nil, "offsets.topic.replication.factor=1")
	four := startObserver(t, nodes, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(four.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	resp := waitQuorum(t, cl, []int32{1, 2, 3}, []int32{4})
	p := resp.Topics[0].Partitions[0]
	if p.LeaderID != four.store.ControllerID() || p.LeaderEpoch <= 0 || p.HighWatermark <= 0 {
		t.Fatalf("leader %d epoch %d hw %d; controller %d", p.LeaderID, p.LeaderEpoch, p.HighWatermark, four.store.ControllerID())
	}
	for _, r := range slices.Concat(p.CurrentVoters, p.Observers) {
		if r.LogEndOffset < 0 || r.LastFetchTimestamp <= 0 {
			t.Fatalf("replica %+v", r)
		}
	}
	if resp.Version != 2 || len(resp.Nodes) != 3 {
		t.Fatalf("v%d nodes %+v", resp.Version, resp.Nodes)
	}
	for _, n := range resp.Nodes {
		want := nodes[n.NodeID-1].cfg.ControllerQuorumVoters[n.NodeID-1]
		if len(n.Listeners) != 1 || n.Listeners[0].Name != "CONTROLLER" || n.Listeners[0].Host != want.Host || int(n.Listeners[0].Port) != want.Port {
			t.Fatalf("node %d listeners %+v, want %s", n.NodeID, n.Listeners, want.Addr())
		}
	}

	// v1: no nodes.
	v1, err := kgo.NewClient(kgo.SeedBrokers(nodes[1].addr), kgo.MaxVersions(func() *kversion.Versions {
		v := kversion.V4_0_0()
		v.SetMaxKeyVersion(55, 1)
		return v
	}()))
	if err != nil {
		t.Fatal(err)
	}
	defer v1.Close()
	if r, err := describeQuorum(ctx, v1); err != nil || r.Version != 1 || len(r.Nodes) != 0 || len(r.Topics[0].Partitions[0].CurrentVoters) != 3 {
		t.Fatalf("v1: %+v %v", r, err)
	}

	// Another partition is unknown.
	{
		req := kmsg.NewPtrDescribeQuorumRequest()
		rt := kmsg.NewDescribeQuorumRequestTopic()
		rt.Topic = "orders"
		rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
		req.Topics = append(req.Topics, rt)
		r, err := req.RequestWith(ctx, cl)
		if err != nil || r.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("describe orders-0: %+v %v", r, err)
		}
	}

	add := func(id int32, clusterID *string, listeners ...kmsg.AddRaftVoterRequestListener) *kmsg.AddRaftVoterResponse {
		t.Helper()
		req := kmsg.NewPtrAddRaftVoterRequest()
		req.VoterID, req.ClusterID, req.TimeoutMillis, req.Listeners = id, clusterID, 10000, listeners
		r, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	remove := func(id int32, clusterID *string) *kmsg.RemoveRaftVoterResponse {
		t.Helper()
		req := kmsg.NewPtrRemoveRaftVoterRequest()
		req.VoterID, req.ClusterID = id, clusterID
		r, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	otherListener := kmsg.NewAddRaftVoterRequestListener()
	otherListener.Name = "PLAINTEXT"
	for _, c := range []struct {
		name string
		code int16
		got  int16
	}{
		{"add a voter", kerr.DuplicateVoter.Code, add(2, nil).ErrorCode},
		{"add an unknown node", kerr.RequestTimedOut.Code, add(9, nil).ErrorCode},
		{"add without a controller listener", kerr.InvalidRequest.Code, add(4, nil, otherListener).ErrorCode},
		{"add with another cluster id", kerr.InconsistentClusterID.Code, add(4, new("nope")).ErrorCode},
		{"remove an observer", kerr.VoterNotFound.Code, remove(4, nil).ErrorCode},
		{"remove with another cluster id", kerr.InconsistentClusterID.Code, remove(1, new("nope")).ErrorCode},
	} {
		if c.got != c.code {
			t.Errorf("%s: %v, want %v", c.name, kerr.ErrorForCode(c.got), kerr.ErrorForCode(c.code))
		}
	}

	// Add node 4 at its controller listener, named as Kafka's tools do.
	host, port, _ := strings.Cut(four.store.ControllerAddr(), ":")
	pn, _ := strconv.Atoi(port)
	l := kmsg.NewAddRaftVoterRequestListener()
	l.Name, l.Host, l.Port = "CONTROLLER", host, uint16(pn)
	cid := four.store.Image().ClusterID
	if r := add(4, &cid, l); r.ErrorCode != 0 {
		t.Fatalf("add voter 4: %v %v", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}
	waitQuorum(t, cl, []int32{1, 2, 3, 4}, nil)

	// Remove the active controller: leadership moves, the node stays a
	// broker following the log as an observer.
	old := four.store.ControllerID()
	if r := remove(old, &cid); r.ErrorCode != 0 {
		t.Fatalf("remove voter %d: %v %v", old, kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}
	var rest []int32
	for _, id := range []int32{1, 2, 3, 4} {
		if id != old {
			rest = append(rest, id)
		}
	}
	resp = waitQuorum(t, cl, rest, []int32{old})
	if l := resp.Topics[0].Partitions[0].LeaderID; l == old {
		t.Fatalf("removed node %d still leads", old)
	}
	var removed *testNode
	for _, n := range append(slices.Clone(nodes), four) {
		if n.cfg.NodeID == old {
			removed = n
		}
	}
	rcl, err := kgo.NewClient(kgo.SeedBrokers(removed.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer rcl.Close()
	if res, err := kadm.NewClient(rcl).CreateTopic(ctx, 1, 1, nil, "after-removal"); err != nil || res.Err != nil {
		t.Fatalf("create a topic through the removed node: %v %v", err, res.Err)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		if _, ok := removed.store.Image().Topics["after-removal"]; !ok {
			return fmt.Errorf("node %d has not applied the topic", old)
		}
		return nil
	}, "the removed node follows the log")
}
