package cluster

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/kafkatest"
	"github.com/kbroker/kbroker/internal/testutil"
	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/replication"
)

// A broker stopping with a controlled shutdown keeps answering its
// clients after its leaderships moved: a producer still writing to it is
// told the new leader (NOT_LEADER_OR_FOLLOWER with the KIP-951 hint)
// rather than finding its connection closed, which would cost it a
// metadata refresh. The stopping broker, the controller here, also hands
// the metadata quorum over instead of leaving it to an election timeout.
func TestControlledShutdownDrainsClients(t *testing.T) {
	nodes := startQuorum(t, 3, nil, "offsets.topic.replication.factor=1")
	tp := replication.TopicPartition{Topic: "drain", Partition: 0}
	var ctrl int32
	testutil.Eventually(t, 30*time.Second, func() bool {
		ctrl = nodes[0].store.ControllerID()
		return ctrl >= 1
	}, "a controller")
	// The controller leads the partition, so its stop both moves a
	// leadership and hands the quorum over.
	stopping := nodes[ctrl-1]
	var others []*testNode
	replicas := []int32{ctrl}
	for i, n := range nodes {
		if int32(i+1) != ctrl {
			others = append(others, n)
			replicas = append(replicas, int32(i+1))
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(others[0].addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	createPartitionOn(ctx, t, cl, tp.Topic, replicas...)
	testutil.Eventually(t, 30*time.Second, func() bool {
		part, err := stopping.replicas.Partition(tp)
		if err != nil || !part.IsLeader() {
			return false
		}
		p, ok := stopping.store.Image().Partition(tp.Topic, tp.Partition)
		return ok && len(p.ISR) == 3
	}, "the controller to lead the partition with all three in its ISR")

	c := kafkatest.Dial(t, stopping.addr)
	stopped := make(chan struct{})
	go func() { stopping.stop(t); close(stopped) }() // stop reports its errors

	// Produce until the broker names another leader, then a few more
	// times, each within the drain's quiet window: every one is answered
	// (the connection does not end while the client is still writing).
	deadline := time.Now().Add(20 * time.Second)
	var hint kmsg.ProduceResponseTopicPartitionCurrentLeader
	hinted := 0
	for time.Now().Before(deadline) && hinted < 5 {
		corr := c.Send(kafkatest.ProduceRequest(11, -1, tp.Topic, map[int32][]byte{0: testBatch(t, 1, -1, -1, -1)}))
		frame, err := c.ReadFrame(10 * time.Second)
		if err != nil {
			t.Fatalf("connection ended while the client was writing (%d answers naming the new leader): %v", hinted, err)
		}
		if got := int32(binary.BigEndian.Uint32(frame)); got != corr {
			t.Fatalf("correlation id %d, want %d", got, corr)
		}
		resp := kmsg.NewPtrProduceResponse()
		resp.Version = 11
		if err := resp.ReadFrom(frame[5:]); err != nil { // id, empty tags
			t.Fatal(err)
		}
		rp := resp.Topics[0].Partitions[0]
		if rp.ErrorCode == kerr.NotLeaderForPartition.Code && rp.CurrentLeader.LeaderID >= 0 && rp.CurrentLeader.LeaderID != ctrl {
			hint = rp.CurrentLeader
			hinted++
		}
		time.Sleep(shutdownQuiet / 4)
	}
	if hinted < 5 {
		t.Fatalf("the stopping broker named the new leader %d times, want 5", hinted)
	}
	<-stopped
	// The survivors have a controller among themselves.
	testutil.Eventually(t, 10*time.Second, func() bool {
		id := others[0].store.ControllerID()
		return id >= 1 && id != ctrl && others[1].store.ControllerID() == id
	}, "a new controller after the old one stopped")
	if p, ok := others[0].store.Image().Partition(tp.Topic, tp.Partition); !ok || p.Leader != hint.LeaderID {
		t.Fatalf("partition %+v, want leader %d as hinted", p, hint.LeaderID)
	}
}

// leadershipMoved is what decides whether a stopping broker drains.
func TestLeadershipMoved(t *testing.T) {
	img := func(leaders ...int32) *metadata.Image {
		parts := make([]*metadata.Partition, len(leaders))
		for i, l := range leaders {
			parts[i] = &metadata.Partition{Leader: l}
		}
		return &metadata.Image{Topics: map[string]*metadata.Topic{"t": {Name: "t", Partitions: parts}}}
	}
	for _, tc := range []struct {
		name          string
		before, after *metadata.Image
		want          bool
	}{
		{"moved to another broker", img(1, 2), img(3, 2), true},
		{"led nothing", img(2, 3), img(2, 3), false},
		{"left without a leader (single node)", img(1), img(metadata.NoLeader), false},
		{"still the leader", img(1), img(1), false},
		{"topic deleted meanwhile", img(1), &metadata.Image{}, false},
	} {
		if got := leadershipMoved(tc.before, tc.after, 1); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A Metadata request is held for followerNotice only when it names a
// partition this node follows from another broker (its fetcher would see
// that leader's death).
func TestFollowsNamedLeader(t *testing.T) {
	img := &metadata.Image{Topics: map[string]*metadata.Topic{
		"followed":  {Name: "followed", Partitions: []*metadata.Partition{{Leader: 2, Replicas: []int32{2, 1}}}},
		"led":       {Name: "led", Partitions: []*metadata.Partition{{Leader: 1, Replicas: []int32{1, 2}}}},
		"elsewhere": {Name: "elsewhere", Partitions: []*metadata.Partition{{Leader: 2, Replicas: []int32{2, 3}}}},
		"offline":   {Name: "offline", Partitions: []*metadata.Partition{{Leader: metadata.NoLeader, Replicas: []int32{1, 2}}}},
	}}
	n := &Node{}
	n.cfg.NodeID = 1
	req := func(topics ...string) *kmsg.MetadataRequest {
		r := kmsg.NewPtrMetadataRequest()
		for _, name := range topics {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(name)
			r.Topics = append(r.Topics, rt)
		}
		return r
	}
	for _, tc := range []struct {
		name string
		req  *kmsg.MetadataRequest
		want bool
	}{
		{"a followed partition", req("led", "followed"), true},
		{"led here", req("led"), false},
		{"not a replica here", req("elsewhere"), false},
		{"no leader", req("offline"), false},
		{"unknown topic", req("nope"), false},
		{"every topic", &kmsg.MetadataRequest{}, true},
	} {
		if got := n.followsNamedLeader(img, tc.req); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
