package itest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kbroker/kbroker/internal/testutil"
)

// TestManyPartitionsUnderLowFileLimit: a broker under ulimit -n 256
// hosts 1,000 partitions (3,000 segment files): CreateTopics succeeds,
// every partition takes a record and reads it back, the process stays
// under its limit (the logs' descriptors are a bounded cache), and after
// a restart under the same limit every partition serves again.
func TestManyPartitionsUnderLowFileLimit(t *testing.T) {
	const partitions = 1000
	dir := t.TempDir()
	b := startBrokerLimited(t, dir, 256)
	topic := topicName(t)
	createTopic(t, b, topic, partitions, nil)
	produceEach := func(round string) {
		t.Helper()
		cl := newClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic(topic))
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var rs []*kgo.Record
		for p := range int32(partitions) {
			rs = append(rs, &kgo.Record{Partition: p, Value: []byte(round)})
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatalf("%s: produce to every partition: %v", round, err)
		}
		if n := openFDs(t, b.cmd.Process.Pid); n >= 256 {
			t.Fatalf("%s: the broker holds %d descriptors under ulimit -n 256", round, n)
		} else {
			t.Logf("%s: the broker holds %d descriptors for %d partitions", round, n, partitions)
		}
	}
	produceEach("before")
	b.stop()
	b.start()
	produceEach("after")
	got := consumeAll(t, b, topic)
	for p := range int32(partitions) {
		if rs := got[p]; len(rs) != 2 {
			t.Fatalf("partition %d reads back %d records, want 2", p, len(rs))
		}
	}
}

// openFDs counts pid's open descriptors.
func openFDs(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Skipf("cannot count the broker's descriptors: %v", err)
	}
	return len(ents)
}

// TestOutOfFilesAfterCreateTopicsLeavesNoHalfState: when the broker runs
// out of file descriptors after the controller committed a topic (the
// limit lowered at run time with prlimit, below what its registered
// capacity assumed), each partition that cannot open leaves no directory
// and is served as KAFKA_STORAGE_ERROR; once descriptors are back, the
// next image apply (any Metadata request) opens them and they serve
// produce, as does an existing topic throughout.
func TestOutOfFilesAfterCreateTopicsLeavesNoHalfState(t *testing.T) {
	if _, err := exec.LookPath("prlimit"); err != nil {
		t.Skip("prlimit (util-linux) not installed")
	}
	dir := t.TempDir()
	b := startBroker(t, dir)
	pid := b.cmd.Process.Pid
	// Only the soft limit moves: lowering the hard one could not be undone.
	setNofile := func(soft string) {
		t.Helper()
		if out, err := exec.Command("prlimit", "--pid", strconv.Itoa(pid), "--nofile="+soft+":").CombinedOutput(); err != nil {
			t.Fatalf("prlimit: %v: %s", err, out)
		}
	}
	out, err := exec.Command("prlimit", "--pid", strconv.Itoa(pid), "--nofile", "--output=SOFT", "--noheadings").Output()
	if err != nil {
		t.Fatalf("prlimit: %v", err)
	}
	soft := strings.TrimSpace(string(out))
	open, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Skipf("cannot count the broker's descriptors: %v", err)
	}
	adm := kadm.NewClient(newClient(t, b))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// The clients' connections (admin, produce) are open before the limit
	// drops: a new one could not be accepted under it.
	live := topicName(t) + "-live"
	createTopic(t, b, live, 1, nil)
	cl := newClient(t, b, kgo.RecordRetries(0), kgo.RequestRetries(0), kgo.DefaultProduceTopic(live))
	if err := cl.ProduceSync(ctx, kgo.StringRecord("before")).FirstErr(); err != nil {
		t.Fatal(err)
	}

	const partitions = 100 // 300 descriptors; about 10 partitions' worth are left
	setNofile(strconv.Itoa(len(open) + 40))
	topic := topicName(t)
	resps, err := adm.CreateTopics(ctx, partitions, 1, nil, topic)
	if err != nil || resps[topic].Err != nil {
		t.Fatalf("CreateTopics (committed by the controller): %v %v", err, resps[topic].Err)
	}
	// The request's Apply and the broker's metadata loop may both be
	// opening partitions: a directory being created is transient, one
	// left without its files once they stop is a half state.
	var opened map[int32]bool
	err = testutil.Poll(ctx, 10*time.Second, func() error {
		var err error
		opened, err = partitionDirs(dir, topic)
		return err
	})
	if err != nil {
		t.Fatalf("half-created partition directory: %v", err)
	}
	if len(opened) == 0 || len(opened) == partitions {
		t.Fatalf("%d of %d partitions opened; the limit should let some and not all open", len(opened), partitions)
	}
	t.Logf("%d of %d partitions opened under the lowered limit", len(opened), partitions)

	var offline int32 = -1
	for p := range int32(partitions) {
		if !opened[p] {
			offline = p
			break
		}
	}
	err = cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: offline, Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("produce to offline partition %d: %v, want KAFKA_STORAGE_ERROR", offline, err)
	}

	// Every Metadata request and metadata change applies the image again,
	// reopening the offline replicas now that descriptors are back.
	setNofile(soft)
	err = testutil.Poll(ctx, 30*time.Second, func() error {
		return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: offline, Value: []byte("y")}).FirstErr()
	})
	if err != nil {
		t.Fatalf("produce to partition %d after descriptors came back: %v", offline, err)
	}
	if err := cl.ProduceSync(ctx, kgo.StringRecord("after")).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", live, err)
	}
}

// partitionDirs returns the partitions of topic with a directory in dir,
// or an error if one lacks its first segment's files.
func partitionDirs(dir, topic string) (map[int32]bool, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	opened := map[int32]bool{}
	for _, e := range ents {
		p, ok := strings.CutPrefix(e.Name(), topic+"-")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			return nil, fmt.Errorf("unexpected entry %s", e.Name())
		}
		files, err := os.ReadDir(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		var names []string
		for _, f := range files {
			names = append(names, f.Name())
		}
		for _, suffix := range []string{".log", ".index", ".timeindex"} {
			if !slices.Contains(names, "00000000000000000000"+suffix) {
				return nil, fmt.Errorf("%s has %v, no %s", e.Name(), names, suffix)
			}
		}
		opened[int32(n)] = true
	}
	return opened, nil
}
