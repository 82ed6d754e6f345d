package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testutil"
	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/storage"
)

// failingDiskFS fails writes and fsyncs of every file under dir with EIO
// once failing is set: the disk of one log dir dies.
type failingDiskFS struct {
	storage.OSFS
	dir     string
	failing atomic.Bool
}

func (f *failingDiskFS) under(name string) bool {
	return f.failing.Load() && strings.HasPrefix(filepath.Clean(name), filepath.Clean(f.dir)+string(os.PathSeparator))
}

func (f *failingDiskFS) OpenFile(name string, flag int, perm os.FileMode) (storage.File, error) {
	file, err := f.OSFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &failingDiskFile{File: file, fs: f, name: name}, nil
}

type failingDiskFile struct {
	storage.File
	fs   *failingDiskFS
	name string
}

func (f *failingDiskFile) WriteAt(p []byte, off int64) (int, error) {
	if f.fs.under(f.name) {
		return 0, &os.PathError{Op: "write", Path: f.name, Err: syscall.EIO}
	}
	return f.File.WriteAt(p, off)
}

func (f *failingDiskFile) Sync() error {
	if f.fs.under(f.name) {
		return &os.PathError{Op: "fsync", Path: f.name, Err: syscall.EIO}
	}
	return f.File.Sync()
}

// TestLogDirFailureMovesLeadership: broker 1 of three has two log dirs and
// leads every partition of a topic. One dir's disk fails: the first write
// there takes the whole dir offline, so the leadership of every partition
// in it (not only the one written) moves to another broker and broker 1
// leaves their ISR, while broker 1 goes on leading the partitions of its
// other dir, where acks=all produce still succeeds. DescribeLogDirs
// answers the failed dir with KAFKA_STORAGE_ERROR, and no acknowledged
// record is lost.
func TestLogDirFailureMovesLeadership(t *testing.T) {
	if testing.Short() {
		t.Skip("three in-process brokers")
	}
	const topic = "dying-disk"
	dirs := []string{filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")}
	fsys := &failingDiskFS{dir: dirs[0]}
	nodes := startQuorum(t, 3, func(n *Node) {
		if n.cfg.NodeID == 1 {
			n.cfg.LogDirs = dirs
			n.logFS = fsys
		}
	}, "broker.heartbeat.interval.ms=200")
	seeds := []string{nodes[0].addr, nodes[1].addr, nodes[2].addr}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(30*time.Second),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	// Broker 1 first in every assignment: it leads all four partitions.
	const partitions = 4
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for p := range int32(partitions) {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = p, []int32{1, 2, 3}
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	}
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 30000
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("CreateTopics: %v %+v", err, resp)
	}

	leaders := func() (map[int32]int32, map[int32][]int32, error) {
		mreq := kmsg.NewPtrMetadataRequest()
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(topic)
		mreq.Topics = append(mreq.Topics, mt)
		mresp, err := mreq.RequestWith(ctx, cl)
		if err != nil {
			return nil, nil, err
		}
		if len(mresp.Topics) != 1 || len(mresp.Topics[0].Partitions) != partitions {
			return nil, nil, fmt.Errorf("metadata: %+v", mresp.Topics)
		}
		l, isr := map[int32]int32{}, map[int32][]int32{}
		for _, p := range mresp.Topics[0].Partitions {
			l[p.Partition], isr[p.Partition] = p.Leader, p.ISR
		}
		return l, isr, nil
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		l, isr, err := leaders()
		if err != nil {
			return err
		}
		for p := range int32(partitions) {
			if l[p] != 1 || len(isr[p]) != 3 {
				return fmt.Errorf("partition %d: leader %d, ISR %v", p, l[p], isr[p])
			}
		}
		return nil
	}, "broker 1 leads every partition with a full ISR")

	produce := func(p int32, v string) error {
		return cl.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte(v)}).FirstErr()
	}
	var failing, healthy []int32
	testutil.Eventually(t, 10*time.Second, func() error {
		failing, healthy = nil, nil
		for p := range int32(partitions) {
			dir, ok := nodes[0].logs.DirOf(topic, p)
			if !ok {
				return fmt.Errorf("partition %d not opened on broker 1 yet", p)
			}
			if dir == dirs[0] {
				failing = append(failing, p)
			} else {
				healthy = append(healthy, p)
			}
		}
		return nil
	}, "broker 1 opens every partition")
	if len(failing) == 0 || len(healthy) == 0 {
		t.Fatalf("partitions in %s: %v, in %s: %v", dirs[0], failing, dirs[1], healthy)
	}
	want := map[int32][]string{}
	for p := range int32(partitions) {
		for i := range 5 {
			v := fmt.Sprintf("before-%d-%d", p, i)
			if err := produce(p, v); err != nil {
				t.Fatalf("produce to %d: %v", p, err)
			}
			want[p] = append(want[p], v)
		}
	}

	// The disk dies; the next write to one of its partitions finds out.
	fsys.failing.Store(true)
	v := fmt.Sprintf("after-%d", failing[0])
	if err := produce(failing[0], v); err != nil {
		t.Fatalf("acks=all produce to partition %d (its leader's disk failed: the client retries on the new leader): %v", failing[0], err)
	}
	want[failing[0]] = append(want[failing[0]], v)
	testutil.Eventually(t, 30*time.Second, func() error {
		l, isr, err := leaders()
		if err != nil {
			return err
		}
		for _, p := range failing {
			if l[p] == 1 || l[p] < 0 || slices.Contains(isr[p], 1) {
				return fmt.Errorf("partition %d in the failed dir: leader %d, ISR %v", p, l[p], isr[p])
			}
		}
		return nil
	}, "leadership of every partition of the failed dir leaves broker 1")
	l, _, err := leaders()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range healthy {
		if l[p] != 1 {
			t.Fatalf("partition %d in the healthy dir: leader %d, want 1 still", p, l[p])
		}
	}
	for p := range int32(partitions) {
		v := fmt.Sprintf("after-%d", p)
		if p == failing[0] {
			v += "-again"
		}
		if err := produce(p, v); err != nil {
			t.Fatalf("acks=all produce to partition %d after the failure: %v", p, err)
		}
		want[p] = append(want[p], v)
	}
	if l, _, _ := leaders(); !slices.ContainsFunc(healthy, func(p int32) bool { return l[p] == 1 }) {
		t.Fatal("broker 1 no longer leads the partitions of its healthy dir")
	}

	// The failed dir is reported as such; the other is fine.
	dresp, err := cl.Broker(1).Request(ctx, kmsg.NewPtrDescribeLogDirsRequest())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dresp.(*kmsg.DescribeLogDirsResponse).Dirs {
		wantCode := int16(0)
		if d.Dir == dirs[0] {
			wantCode = kerr.KafkaStorageError.Code
		}
		if d.ErrorCode != wantCode {
			t.Fatalf("DescribeLogDirs %s: error %d, want %d", d.Dir, d.ErrorCode, wantCode)
		}
	}
	if n := nodes[0].logs.OfflineDirCount(); n != 1 {
		t.Fatalf("offline log dirs %d, want 1", n)
	}

	// Every acknowledged record reads back, in order, per partition.
	cons, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	got := map[int32][]string{}
	total := func() (n int) {
		for _, vs := range got {
			n += len(vs)
		}
		return n
	}
	wantTotal := 0
	for _, vs := range want {
		wantTotal += len(vs)
	}
	for total() < wantTotal && ctx.Err() == nil {
		cons.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got[r.Partition] = append(got[r.Partition], string(r.Value)) })
	}
	for p := range int32(partitions) {
		if strings.Join(got[p], ",") != strings.Join(want[p], ",") {
			t.Fatalf("partition %d: consumed %v, want %v", p, got[p], want[p])
		}
	}
}

// TestAllLogDirsOfflineStopsBroker: with its only log dir failed, the
// broker can serve nothing and stops, as Kafka's does; Run says why.
func TestAllLogDirsOfflineStopsBroker(t *testing.T) {
	dir := t.TempDir()
	fsys := &failingDiskFS{dir: dir}
	tn, err := tryStartNode(t, dir, func(n *Node) { n.logFS = fsys }, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if tn.cancel != nil {
			tn.stop(t)
		}
	}()
	createTopic(t, tn.addr, "t", 1, nil)
	fsys.failing.Store(true)
	cl, err := kgo.NewClient(kgo.SeedBrokers(tn.addr), kgo.DefaultProduceTopic("t"), kgo.RecordRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = cl.ProduceSync(ctx, kgo.StringRecord("v")).FirstErr() // fails: the disk is gone
	select {
	case err := <-tn.done:
		tn.cancel()
		tn.cancel = nil
		if !errors.Is(err, errAllLogDirsOffline) {
			t.Fatalf("Run returned %v, want %v", err, errAllLogDirsOffline)
		}
	case <-ctx.Done():
		t.Fatal("the broker did not stop with its only log dir offline")
	}
}

// TestLogDirBackAfterRestart: a broker whose log dir failed keeps its
// other dir; restarted with the disk healthy, it serves the failed dir's
// partition again with every record acknowledged before the failure.
func TestLogDirBackAfterRestart(t *testing.T) {
	base := t.TempDir()
	dirs := []string{filepath.Join(base, "a"), filepath.Join(base, "b")}
	fsys := &failingDiskFS{dir: dirs[0]}
	sets := []string{"log.dirs=" + dirs[0] + "," + dirs[1]}
	node := startNodeWith(t, base, func(n *Node) { n.logFS = fsys }, sets...)
	createTopic(t, node.addr, "back", 2, nil)
	acked := produceAll(t, node.addr, "back", 100)
	var failed int32 = -1
	for p := range int32(2) {
		if dir, _ := node.logs.DirOf("back", p); dir == dirs[0] {
			failed = p
		}
	}
	if failed < 0 {
		t.Fatalf("no partition of back in %s", dirs[0])
	}
	fsys.failing.Store(true)
	cl, err := kgo.NewClient(kgo.SeedBrokers(node.addr), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "back", Partition: failed, Value: []byte("lost")}).FirstErr(); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("produce to the partition of the failed dir: %v, want KAFKA_STORAGE_ERROR", err)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		if _, err := node.replicas.Partition(replication.TopicPartition{Topic: "back", Partition: failed}); !errors.Is(err, storage.ErrLogDirOffline) {
			return fmt.Errorf("partition %d: %w", failed, err)
		}
		return nil
	}, "the partition of the failed dir is offline")
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "back", Partition: 1 - failed, Value: []byte("kept")}).FirstErr(); err != nil {
		t.Fatalf("produce to the partition of the healthy dir: %v", err)
	}
	cl.Close()
	node.stop(t)

	fsys.failing.Store(false)
	node = startNodeWith(t, base, func(n *Node) { n.logFS = fsys }, sets...)
	got := consumeAll(t, node.addr, "back", len(acked)+1)
	checkAcked(t, acked, got)
	if dir, _ := node.logs.DirOf("back", failed); dir != dirs[0] {
		t.Fatalf("partition %d in %q after the restart, want %s", failed, dir, dirs[0])
	}
}
