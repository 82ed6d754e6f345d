package cluster

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testutil"
	"github.com/kbroker/kbroker/storage"
)

// failDirFS fails every open under a directory whose name has the given
// prefix with EMFILE: that partition's log cannot be opened on this
// broker, while the log dir itself is healthy (a disk error such as EIO
// would take the whole log dir offline: logdir_failure_test.go).
type failDirFS struct {
	storage.OSFS
	prefix string
}

func (f failDirFS) OpenFile(name string, flag int, perm os.FileMode) (storage.File, error) {
	for _, part := range strings.Split(name, string(os.PathSeparator)) {
		if strings.HasPrefix(part, f.prefix) {
			return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EMFILE}
		}
	}
	return f.OSFS.OpenFile(name, flag, perm)
}

// TestOfflineLeaderReplicaMovesLeadership: the preferred leader of a
// partition cannot open its log (the partition's directory fails on that
// broker only). It reports the replica offline with its heartbeats, the
// controller moves leadership to another ISR member, and acks=all writes
// go on there with nothing lost.
func TestOfflineLeaderReplicaMovesLeadership(t *testing.T) {
	if testing.Short() {
		t.Skip("three in-process brokers")
	}
	const topic = "offline-leader"
	nodes := startQuorum(t, 3, func(n *Node) {
		if n.cfg.NodeID == 1 {
			n.logFS = failDirFS{prefix: topic + "-"}
		}
	}, "broker.heartbeat.interval.ms=200")
	seeds := []string{nodes[0].addr, nodes[1].addr, nodes[2].addr}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// Broker 1 first in the assignment: the controller makes it leader.
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, []int32{1, 2, 3}
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 30000
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("CreateTopics: %v %+v", err, resp)
	}

	leaderISR := func() (int32, []int32, error) {
		mreq := kmsg.NewPtrMetadataRequest()
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(topic)
		mreq.Topics = append(mreq.Topics, mt)
		mresp, err := mreq.RequestWith(ctx, cl)
		if err != nil {
			return 0, nil, err
		}
		if len(mresp.Topics) != 1 || len(mresp.Topics[0].Partitions) != 1 {
			return 0, nil, fmt.Errorf("metadata: %+v", mresp.Topics)
		}
		p := mresp.Topics[0].Partitions[0]
		return p.Leader, p.ISR, nil
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		leader, isr, err := leaderISR()
		if err != nil {
			return err
		}
		if leader == 1 || leader < 0 {
			return fmt.Errorf("leader %d, ISR %v", leader, isr)
		}
		for _, id := range isr {
			if id == 1 {
				return fmt.Errorf("leader %d, but broker 1 is still in the ISR %v", leader, isr)
			}
		}
		return nil
	}, "leadership leaves broker 1, whose replica is offline")

	var want []string
	for i := range 20 {
		v := fmt.Sprint("v", i)
		if err := cl.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr(); err != nil {
			t.Fatalf("acks=all produce %d after the move: %v", i, err)
		}
		want = append(want, v)
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var got []string
	for len(got) < len(want) && ctx.Err() == nil {
		cons.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("consumed %v, want %v", got, want)
	}
}
