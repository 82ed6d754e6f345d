package cluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kbroker/kbroker/cluster/server"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeLogDirs through kadm lists both log directories of the broker
// with the partitions each holds and their sizes as the logs have them
// (larger than the bytes produced), a zero offset lag for a leader, the
// file system totals, and only the partitions asked for. A directory
// whose file system cannot be statted answers KAFKA_STORAGE_ERROR.
func TestDescribeLogDirsSizes(t *testing.T) {
	base := t.TempDir()
	dirs := []string{filepath.Join(base, "a"), filepath.Join(base, "b")}
	node := startNode(t, "", "log.dirs="+dirs[0]+","+dirs[1])
	createTopic(t, node.addr, "sized", 2, nil)
	acked := produceAll(t, node.addr, "sized", 200)
	if len(acked) != 200 {
		t.Fatalf("%d acked", len(acked))
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(node.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	all, err := adm.DescribeBrokerLogDirs(ctx, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 {
		t.Fatalf("dirs %v, want 2", all)
	}
	found := 0
	for _, dir := range dirs {
		d, ok := all[dir]
		if !ok || d.Err != nil {
			t.Fatalf("dir %s: %+v", dir, d)
		}
		if d.TotalBytes <= 0 || d.UsableBytes <= 0 || d.UsableBytes > d.TotalBytes {
			t.Fatalf("dir %s: total %d usable %d", dir, d.TotalBytes, d.UsableBytes)
		}
		for p, dp := range d.Topics["sized"] {
			found++
			l, ok := node.logs.Get("sized", p)
			if !ok || filepath.Dir(l.Dir()) != dir {
				t.Fatalf("partition %d listed under %s", p, dir)
			}
			if dp.Size != l.Size() || dp.Size == 0 {
				t.Fatalf("partition %d: size %d, log has %d", p, dp.Size, l.Size())
			}
			if dp.OffsetLag != 0 || dp.IsFuture {
				t.Fatalf("partition %d: lag %d future %v", p, dp.OffsetLag, dp.IsFuture)
			}
		}
	}
	if found != 2 {
		t.Fatalf("%d partitions of sized listed, want 2", found)
	}

	some, err := adm.DescribeBrokerLogDirs(ctx, 1, kadm.TopicsSet{"sized": {1: {}}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	some.EachPartition(func(p kadm.DescribedLogDirPartition) {
		n++
		if p.Topic != "sized" || p.Partition != 1 {
			t.Fatalf("asked for sized-1, got %s-%d", p.Topic, p.Partition)
		}
	})
	if n != 1 {
		t.Fatalf("%d partitions, want 1", n)
	}

	// Take the directory of partition 0 away for a moment.
	l0, _ := node.logs.Get("sized", 0)
	gone := filepath.Dir(l0.Dir())
	if err := os.Rename(gone, gone+".away"); err != nil {
		t.Fatal(err)
	}
	// Straight to the broker: kgo's sharded merge of DescribeLogDirs
	// keeps neither directory errors nor totals.
	kresp, err := cl.Broker(1).Request(ctx, kmsg.NewPtrDescribeLogDirsRequest())
	if rerr := os.Rename(gone+".away", gone); rerr != nil {
		t.Fatal(rerr)
	}
	if err != nil {
		t.Fatal(err)
	}
	resp := kresp.(*kmsg.DescribeLogDirsResponse)
	if len(resp.Dirs) != 2 {
		t.Fatalf("%d dirs, want 2", len(resp.Dirs))
	}
	for _, d := range resp.Dirs {
		want := int16(0)
		if d.Dir == gone {
			want = kerr.KafkaStorageError.Code
		}
		if d.ErrorCode != want {
			t.Fatalf("dir %s: error %d, want %d", d.Dir, d.ErrorCode, want)
		}
	}
}

// Without DESCRIBE on the CLUSTER the answer is no directories and, from
// v3, CLUSTER_AUTHORIZATION_FAILED.
func TestDescribeLogDirsDenied(t *testing.T) {
	authz := &denyingAuthorizer{
		deny:  map[kmsg.ACLResourceType]string{kmsg.ACLResourceTypeCluster: server.ClusterResourceName},
		calls: map[int16]int{},
	}
	node := startNodeWith(t, "", func(n *Node) { n.server.SetAuthorizer(authz) })
	cl, err := kgo.NewClient(kgo.SeedBrokers(node.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = kadm.NewClient(cl).DescribeBrokerLogDirs(ctx, 1, nil)
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("got %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
}
