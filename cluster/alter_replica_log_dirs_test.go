package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/internal/testutil"
	"github.com/kbroker/kbroker/storage"
)

// TestAlterReplicaLogDirs moves a partition between a broker's two log
// directories through kadm while a producer writes acks=all to it: every
// acknowledged record reads back at its offset afterwards (nothing lost,
// nothing duplicated), the log is in the new directory, and
// DescribeLogDirs lists it there. Kafka's error codes: an unknown
// directory is LOG_DIR_NOT_FOUND, a replica the broker does not host is
// REPLICA_NOT_AVAILABLE and the directory is remembered: the partition is
// created there.
func TestAlterReplicaLogDirs(t *testing.T) {
	base := t.TempDir()
	dirs := []string{filepath.Join(base, "a"), filepath.Join(base, "b")}
	node := startNode(t, "", "log.dirs="+dirs[0]+","+dirs[1])
	const topic = "moving"
	createTopic(t, node.addr, topic, 1, map[string]*string{"segment.bytes": kmsg.StringPtr("4096")})
	acked := produceAll(t, node.addr, topic, 300)

	cl, err := kgo.NewClient(kgo.SeedBrokers(node.addr), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	from, ok := node.logs.DirOf(topic, 0)
	if !ok {
		t.Fatal("partition not hosted")
	}
	to := dirs[0]
	if from == to {
		to = dirs[1]
	}

	// Produce acks=all throughout the move.
	var (
		mu      sync.Mutex
		during  = map[tpo]string{}
		prodErr error
		wg      sync.WaitGroup
	)
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 5000; i++ {
			select {
			case <-stop:
				return
			default:
			}
			v := fmt.Sprintf("during-%05d", i)
			r, err := cl.ProduceSync(ctx, kgo.StringRecord(v)).First()
			mu.Lock()
			if err != nil {
				prodErr = err
				mu.Unlock()
				return
			}
			during[tpo{r.Partition, r.Offset}] = v
			mu.Unlock()
		}
	}()

	produced := func() int {
		mu.Lock()
		defer mu.Unlock()
		if prodErr != nil {
			t.Fatalf("produce during the move: %v", prodErr)
		}
		return len(during)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		if n := produced(); n < 10 {
			return fmt.Errorf("%d produced", n)
		}
		return nil
	}, "the producer is under way before the move")
	var req kadm.AlterReplicaLogDirsReq
	req.Add(to, kadm.TopicsSet{topic: {0: {}}})
	resps, err := adm.AlterBrokerReplicaLogDirs(ctx, 1, req)
	if err != nil {
		t.Fatal(err)
	}
	if r := resps[topic][0]; r.Err != nil {
		t.Fatalf("AlterReplicaLogDirs: %v", r.Err)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		if dir, _ := node.logs.DirOf(topic, 0); dir != to {
			return fmt.Errorf("partition in %s", dir)
		}
		if moving := node.replicas.MovingReplicas(); len(moving) != 0 {
			return fmt.Errorf("still moving: %v", moving)
		}
		return nil
	}, "the partition moves to %s", to)
	// A few more records after the move, then stop.
	atMove := produced()
	testutil.Eventually(t, 10*time.Second, func() error {
		if n := produced(); n < atMove+10 {
			return fmt.Errorf("%d produced after the move", n-atMove)
		}
		return nil
	}, "records produced after the move")
	close(stop)
	wg.Wait()
	if prodErr != nil {
		t.Fatalf("produce during the move: %v", prodErr)
	}
	t.Logf("%d records produced around the move", len(during))
	for k, v := range during {
		acked[k] = v
	}
	got := consumeAll(t, node.addr, topic, len(acked))
	checkAcked(t, acked, got)
	if len(got) != len(acked) {
		t.Fatalf("read %d records, acknowledged %d", len(got), len(acked))
	}
	l, _ := node.logs.Get(topic, 0)
	if filepath.Dir(l.Dir()) != to {
		t.Fatalf("log in %s, want %s", l.Dir(), to)
	}
	described, err := adm.DescribeBrokerLogDirs(ctx, 1, kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := described[to].Topics[topic][0]; !ok {
		t.Fatalf("DescribeLogDirs does not list %s-0 under %s: %+v", topic, to, described)
	}
	if _, ok := described[from].Topics[topic][0]; ok {
		t.Fatalf("DescribeLogDirs still lists %s-0 under %s", topic, from)
	}

	// Error codes.
	for _, tc := range []struct {
		name  string
		dir   string
		topic string
		want  error
	}{
		{"unknown dir", filepath.Join(base, "c"), topic, kerr.LogDirNotFound},
		{"replica not hosted", from, "later", kerr.ReplicaNotAvailable},
		{"already there", to, topic, nil},
	} {
		var req kadm.AlterReplicaLogDirsReq
		req.Add(tc.dir, kadm.TopicsSet{tc.topic: {0: {}}})
		resps, err := adm.AlterBrokerReplicaLogDirs(ctx, 1, req)
		if err != nil {
			t.Fatal(err)
		}
		if got := resps[tc.topic][0].Err; !errors.Is(got, tc.want) && got != tc.want {
			t.Fatalf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	// The remembered directory: "later" is created in from.
	createTopic(t, node.addr, "later", 1, nil)
	if dir, _ := node.logs.DirOf("later", 0); dir != from {
		t.Fatalf("later-0 created in %s, want the preferred %s", dir, from)
	}
}

// Without ALTER on the CLUSTER every partition answers
// CLUSTER_AUTHORIZATION_FAILED.
func TestAlterReplicaLogDirsDenied(t *testing.T) {
	authz := &denyingAuthorizer{
		deny:  map[kmsg.ACLResourceType]string{kmsg.ACLResourceTypeCluster: server.ClusterResourceName},
		calls: map[int16]int{},
	}
	dir := t.TempDir()
	node := startNodeWith(t, dir, func(n *Node) { n.server.SetAuthorizer(authz) })
	cl, err := kgo.NewClient(kgo.SeedBrokers(node.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var req kadm.AlterReplicaLogDirsReq
	req.Add(dir, kadm.TopicsSet{"t": {0: {}, 1: {}}})
	resps, err := kadm.NewClient(cl).AlterBrokerReplicaLogDirs(ctx, 1, req)
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 2; p++ {
		if err := resps["t"][p].Err; !errors.Is(err, kerr.ClusterAuthorizationFailed) {
			t.Fatalf("partition %d: %v, want CLUSTER_AUTHORIZATION_FAILED", p, err)
		}
	}
}

// gatedFutureFS holds the creation of a future log's files until gate
// is closed: a move stays in its first, unlocked, copy.
type gatedFutureFS struct {
	storage.OSFS
	gate    chan struct{}
	created atomic.Int32
}

func (f *gatedFutureFS) OpenFile(name string, flag int, perm os.FileMode) (storage.File, error) {
	if flag&os.O_CREATE != 0 && strings.Contains(name, "-future"+string(os.PathSeparator)) {
		f.created.Add(1)
		<-f.gate
	}
	return f.OSFS.OpenFile(name, flag, perm)
}

// TestAlterReplicaLogDirsShowsFuture: while a move is in progress,
// DescribeLogDirs lists the partition in its current directory and as a
// future replica (IsFuture) in the destination, with a positive offset
// lag; once done, only in the destination.
func TestAlterReplicaLogDirsShowsFuture(t *testing.T) {
	base := t.TempDir()
	dirs := []string{filepath.Join(base, "a"), filepath.Join(base, "b")}
	fsys := &gatedFutureFS{gate: make(chan struct{})}
	released := false
	release := func() {
		if !released {
			released = true
			close(fsys.gate)
		}
	}
	defer release()
	node := startNodeWith(t, "", func(n *Node) { n.logFS = fsys }, "log.dirs="+dirs[0]+","+dirs[1])
	const topic = "future"
	createTopic(t, node.addr, topic, 1, map[string]*string{"segment.bytes": kmsg.StringPtr("2048")})
	produceAll(t, node.addr, topic, 200)
	from, _ := node.logs.DirOf(topic, 0)
	to := dirs[0]
	if from == to {
		to = dirs[1]
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(node.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var req kadm.AlterReplicaLogDirsReq
	req.Add(to, kadm.TopicsSet{topic: {0: {}}})
	resps, err := kadm.NewClient(cl).AlterBrokerReplicaLogDirs(ctx, 1, req)
	if err != nil || resps[topic][0].Err != nil {
		t.Fatalf("AlterReplicaLogDirs: %v %v", err, resps[topic][0].Err)
	}
	describe := func() map[string][]kmsg.DescribeLogDirsResponseDirTopicPartition {
		kresp, err := cl.Broker(1).Request(ctx, kmsg.NewPtrDescribeLogDirsRequest())
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]kmsg.DescribeLogDirsResponseDirTopicPartition{}
		for _, d := range kresp.(*kmsg.DescribeLogDirsResponse).Dirs {
			for _, rt := range d.Topics {
				if rt.Topic == topic {
					out[d.Dir] = append(out[d.Dir], rt.Partitions...)
				}
			}
		}
		return out
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		if fsys.created.Load() < 1 {
			return fmt.Errorf("the copy has not started")
		}
		return nil
	}, "the move is copying")
	got := describe()
	if len(got[from]) != 1 || got[from][0].IsFuture || len(got[to]) != 1 || !got[to][0].IsFuture || got[to][0].OffsetLag <= 0 {
		t.Fatalf("during the move: %+v", got)
	}
	release()
	testutil.Eventually(t, 10*time.Second, func() error {
		got := describe()
		if len(got[from]) != 0 || len(got[to]) != 1 || got[to][0].IsFuture {
			return fmt.Errorf("%+v", got)
		}
		return nil
	}, "the move completes")
}
