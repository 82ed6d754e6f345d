package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testutil"
	"github.com/kbroker/kbroker/metadata"
)

// A partition with its only replica on broker 1 is reassigned to broker
// 2: broker 2 catches up and joins the ISR, leadership moves, broker 1
// leaves and deletes its log, and every acknowledged record is read back
// from broker 2. A reassignment to a broker that never catches up stays
// listed as in progress until it is cancelled; cancelling again is
// NO_REASSIGNMENT_IN_PROGRESS.
func TestReassignPartitionMovesData(t *testing.T) {
	nodes := startPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(nodes[0].addr, nodes[1].addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	const topic = "moving"
	creq := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, -1, -1
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Partition, a.Replicas = 0, []int32{1}
	ct.ReplicaAssignment = append(ct.ReplicaAssignment, a)
	creq.Topics = append(creq.Topics, ct)
	if cresp, err := creq.RequestWith(ctx, cl); err != nil || cresp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create topic: %v %+v", err, cresp)
	}
	acked := produceAll(t, nodes[0].addr, topic, 500)
	if len(acked) != 500 {
		t.Fatalf("%d acknowledged", len(acked))
	}

	req := kadm.AlterPartitionAssignmentsReq{}
	req.Assign(topic, 0, []int32{2})
	res, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Error(); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		testutil.Eventually(t, 30*time.Second, func() error {
			p, _ := n.store.Image().Partition(topic, 0)
			if !slices.Equal(p.Replicas, []int32{2}) || !slices.Equal(p.ISR, []int32{2}) || p.Leader != 2 || p.Reassigning() {
				return fmt.Errorf("partition %+v", p)
			}
			return nil
		}, "the reassignment completes")
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		_, ok := nodes[0].logs.Get(topic, 0)
		return !ok
	}, "broker 1 deletes the log it no longer hosts")
	got := consumeAll(t, nodes[1].addr, topic, len(acked))
	checkAcked(t, acked, got)

	// A broker that is registered but never fetches: the reassignment
	// adding it cannot complete.
	if err := nodes[0].store.RegisterBroker(ctx, metadata.BrokerRegistration{ID: 3, IncarnationID: "ghost",
		Endpoints: []metadata.Endpoint{{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: 1, SecurityProtocol: "PLAINTEXT"}}}); err != nil {
		t.Fatal(err)
	}
	req = kadm.AlterPartitionAssignmentsReq{}
	req.Assign(topic, 0, []int32{2, 3})
	if res, err := adm.AlterPartitionAssignments(ctx, req); err != nil || res.Error() != nil {
		t.Fatalf("reassign to 2,3: %v %v", err, res.Error())
	}
	// Each broker answers from its own metadata image, which may lag the
	// controller's for a moment.
	testutil.Eventually(t, 10*time.Second, func() error {
		listed, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{topic: {0: {}, 1: {}}})
		if err != nil {
			return err
		}
		l, ok := listed[topic][0]
		if !ok || len(listed[topic]) != 1 || !slices.Equal(l.Replicas, []int32{2, 3}) || !slices.Equal(l.AddingReplicas, []int32{3}) || len(l.RemovingReplicas) != 0 {
			return fmt.Errorf("listed %+v", listed)
		}
		// Null topics lists every reassignment (kadm never sends it).
		all, err := kmsg.NewPtrListPartitionReassignmentsRequest().RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		if len(all.Topics) != 1 || all.Topics[0].Topic != topic || len(all.Topics[0].Partitions) != 1 {
			return fmt.Errorf("null topics listed %+v", all.Topics)
		}
		return nil
	}, "the reassignment to 2,3 is listed in progress")
	inProgress := func() error {
		for _, n := range nodes {
			p, _ := n.store.Image().Partition(topic, 0)
			if !p.Reassigning() || !slices.Equal(p.ISR, []int32{2}) {
				return fmt.Errorf("node %d: partition %+v", n.cfg.NodeID, p)
			}
		}
		return nil
	}
	testutil.Eventually(t, 10*time.Second, inProgress, "both brokers see the reassignment")
	testutil.CheckFor(t, time.Second, inProgress, "the reassignment waits for broker 3, which never catches up")
	req = kadm.AlterPartitionAssignmentsReq{}
	req.CancelAssign(topic, 0)
	if res, err := adm.AlterPartitionAssignments(ctx, req); err != nil || res.Error() != nil {
		t.Fatalf("cancel: %v %v", err, res.Error())
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		listed, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{topic: {0: {}}})
		if err == nil && len(listed[topic]) != 0 {
			err = fmt.Errorf("listed %+v", listed)
		}
		return err
	}, "no reassignment listed after the cancellation")
	for _, n := range nodes {
		testutil.Eventually(t, 10*time.Second, func() error {
			if p, _ := n.store.Image().Partition(topic, 0); !slices.Equal(p.Replicas, []int32{2}) || p.Leader != 2 || p.Reassigning() {
				return fmt.Errorf("node %d: %+v", n.cfg.NodeID, p)
			}
			return nil
		}, "the partition is back on broker 2 alone")
	}
	res, err = adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Error(); !errors.Is(err, kerr.NoReassignmentInProgress) {
		t.Fatalf("cancel again: got %v, want NO_REASSIGNMENT_IN_PROGRESS", err)
	}
	req = kadm.AlterPartitionAssignmentsReq{}
	req.Assign(topic, 0, []int32{2, 9})
	res, err = adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Error(); !errors.Is(err, kerr.InvalidReplicaAssignment) {
		t.Fatalf("unknown broker: got %v, want INVALID_REPLICA_ASSIGNMENT", err)
	}
}
