package itest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// mountTmpfs mounts a tmpfs of size at a new temporary directory: a
// disk that really fills up. The test is skipped when this process may
// not mount one (not root, or no CAP_SYS_ADMIN), saying so.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("a full disk needs a size-limited tmpfs, and this process cannot mount one (%v: %s); run as root", err, strings.TrimSpace(string(out)))
	}
	// Registered after TempDir's removal, so it runs before it.
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir
}

// resizeTmpfs gives a mounted tmpfs another size: space freed.
func resizeTmpfs(t *testing.T, dir, size string) {
	t.Helper()
	if out, err := exec.Command("mount", "-o", "remount,size="+size, dir).CombinedOutput(); err != nil {
		t.Fatalf("resizing %s: %v: %s", dir, err, out)
	}
}

// A broker one of whose log dirs fills up stays up: produce to its
// partitions there gets KAFKA_STORAGE_ERROR, the dir goes offline,
// leadership moves to the replicas with space and the acks=all load goes
// on without losing an acknowledged record; once space is freed, a
// restart brings the dir back and the broker rejoins every ISR (as in
// Kafka, the dir stays offline until a restart).
func TestDiskFullLogDir(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a disk under a three-node cluster")
	}
	c := startCluster(t, 3, "min.insync.replicas=2")
	keepLogs(t, c)
	full := c.node(1)
	disk := mountTmpfs(t, "24m")
	// Node 1 keeps its metadata where it was and puts its partitions on
	// the small disk.
	full.stop()
	full.args = append(full.args, "--set", "metadata.log.dir="+full.dir, "--set", "log.dirs="+disk)
	full.dir = disk
	full.start()

	topic := topicName(t)
	createReplicated(t, c, topic, 6, 3, nil)
	// A topic on node 1 alone fills its disk with large records.
	filler := topic + "-filler"
	adm := kadm.NewClient(clusterClient(t, c))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = filler, -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, []int32{1}
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, clusterClient(t, c))
	if err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("creating %s: %v %+v", filler, err, resp)
	}

	// A second, healthy log dir (JBOD): with one dir, a full disk takes
	// every dir offline and the broker halts, as Kafka's does (KIP-112).
	full.stop()
	spare := t.TempDir()
	full.args = append(full.args, "--set", "log.dirs="+disk+","+spare)
	full.start()
	c.waitConverged(60*time.Second, "full ISR with the second log dir", fullISR(c, topic, 6, 3))

	load := startLoad(t, c, topic, 5, 10*time.Millisecond, 1_000_000)
	time.Sleep(time.Second)

	fill := clusterClient(t, c, kgo.DefaultProduceTopic(filler), kgo.RecordRetries(0), kgo.ProducerBatchMaxBytes(1<<20))
	big := make([]byte, 256<<10)
	_, _ = rand.Read(big) // incompressible: the producer compresses
	var fillErr error
	for i := 0; i < 400 && fillErr == nil; i++ {
		fillErr = fill.ProduceSync(ctx, &kgo.Record{Value: big}).FirstErr()
	}
	if out, err := exec.Command("df", "-h", disk).CombinedOutput(); err == nil {
		t.Logf("%s", out)
	}
	if !errors.Is(fillErr, kerr.KafkaStorageError) {
		t.Logf("node 1 log:\n%s", full.logTail(40))
		t.Fatalf("filling a 24 MiB disk with 100 MiB: %v, want KAFKA_STORAGE_ERROR", fillErr)
	}
	atFault := load.acks.Count()
	t.Logf("the disk filled: %v (%d acknowledged so far)", fillErr, atFault)

	// Node 1 stays up and answers; its leaderships move to 2 and 3.
	c.waitConverged(60*time.Second, "leaders on the brokers with space", func(m *kmsg.MetadataResponse) bool {
		for _, p := range partStates(m, topic) {
			if p.Leader != 2 && p.Leader != 3 {
				return false
			}
		}
		return true
	})
	if !full.running() {
		t.Fatalf("the broker with a full disk exited; log tail:\n%s", full.logTail(logTailLines))
	}
	testutil.Eventually(t, 30*time.Second, func() bool { return load.acks.Count() > atFault+500 }, "acks=all records acknowledged after the fault")
	load.finish(t)
	checkLogOnce(t, load.acks, consumeAll(t, c.node(2), topic))

	// Space freed and a restart: the dir is back and node 1 rejoins.
	resizeTmpfs(t, disk, "256m")
	full.stop()
	full.start()
	c.waitConverged(90*time.Second, "full ISR after the restart with space", fullISR(c, topic, 6, 3))
	if _, err := adm.DeleteTopics(ctx, filler); err != nil {
		t.Logf("deleting %s: %v", filler, err)
	}
}

// The metadata log's disk fills up under a single node: the first failed
// write to the Raft log stops the node, as Kafka stops a node whose
// metadata log dir fails, with a message saying why; once space is freed
// it starts again, every topic whose creation was acknowledged is there
// (the Raft log was not corrupted), and new ones are created.
func TestDiskFullMetadataLog(t *testing.T) {
	if testing.Short() {
		t.Skip("fills the metadata log's disk")
	}
	meta := mountTmpfs(t, "4m")
	b := startBroker(t, t.TempDir(), "metadata.log.dir="+meta)
	// Leave the metadata log 256 KiB.
	ballast := filepath.Join(meta, "ballast")
	_ = exec.Command("dd", "if=/dev/zero", "of="+ballast, "bs=64k").Run() // ends at ENOSPC
	if out, err := exec.Command("truncate", "-s", "-256K", ballast).CombinedOutput(); err != nil {
		t.Fatalf("truncate: %v %s", err, out)
	}
	adm := kadm.NewClient(newClient(t, b, kgo.RequestRetries(2)))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var created []string
	for i := 0; i < 5000 && b.running(); i++ {
		name := fmt.Sprintf("%s-%04d", topicName(t), i)
		rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
		res, err := adm.CreateTopic(rctx, 1, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, name)
		rcancel()
		if err == nil && res.Err == nil {
			created = append(created, name)
		}
	}
	testutil.Eventually(t, 30*time.Second, func() bool { return !b.running() }, "the node to stop on its full metadata disk")
	tail := b.logTail(logTailLines)
	if !strings.Contains(tail, "the metadata log store failed a write") {
		t.Fatalf("the node stopped without saying why; log tail:\n%s", tail)
	}
	t.Logf("after %d topics the full metadata disk stopped the node", len(created))

	// Space freed: it starts, with every acknowledged topic.
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	b.start()
	adm = kadm.NewClient(newClient(t, b))
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range created {
		if !topics.Has(name) {
			t.Errorf("topic %s, whose creation was acknowledged, is gone", name)
		}
	}
	res, err := adm.CreateTopic(ctx, 1, 1, nil, topicName(t)+"-after")
	if err != nil || res.Err != nil {
		t.Fatalf("creating a topic once space was freed: %v %v", err, res.Err)
	}
}
