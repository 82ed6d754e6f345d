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

// TestCreateTopicsBeyondFileLimitFailsCleanly: a broker started under
// ulimit -n 256 registers the partition replicas it can open files for; a
// CreateTopics of 7,000 partitions is refused with POLICY_VIOLATION naming
// the broker, leaves no directory of the topic in log.dirs and no topic in
// Metadata, and the broker keeps serving produce and fetch on an existing
// topic.
func TestCreateTopicsBeyondFileLimitFailsCleanly(t *testing.T) {
	dir := t.TempDir()
	b := startBrokerLimited(t, dir, 256)
	live := topicName(t) + "-live"
	createTopic(t, b, live, 2, nil)
	produceValues(t, []string{b.addr}, live, numberedValues("before", 20))

	huge := topicName(t) + "-huge"
	adm := kadm.NewClient(newClient(t, b))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resps, err := adm.CreateTopics(ctx, 7000, 1, nil, huge)
	if err != nil {
		t.Fatalf("CreateTopics request: %v", err)
	}
	resp := resps[huge]
	if resp.Err != kerr.PolicyViolation || !strings.Contains(resp.ErrMessage, "broker 1") ||
		!strings.Contains(resp.ErrMessage, "file-descriptor limit") {
		t.Fatalf("CreateTopics of 7000 partitions under ulimit -n 256: %v (%q), want POLICY_VIOLATION naming broker 1 and its file-descriptor limit",
			resp.Err, resp.ErrMessage)
	}
	t.Logf("refused: %s", resp.ErrMessage)

	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), huge+"-") {
			t.Fatalf("refused topic left %s in log.dirs", e.Name())
		}
	}
	md, err := adm.Metadata(ctx, huge)
	if err != nil {
		t.Fatal(err)
	}
	if td, ok := md.Topics[huge]; ok && td.Err != kerr.UnknownTopicOrPartition {
		t.Fatalf("refused topic in Metadata: %+v", td)
	}

	produceValues(t, []string{b.addr}, live, numberedValues("after", 20))
	checkValuesOnce(t, append(numberedValues("before", 20), numberedValues("after", 20)...), consumeAll(t, b, live))
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

// TestRestartUnderLowerFileLimitSaysSo: a broker holding 150 partition
// replicas restarted under ulimit -n 256 (room for 64) starts, serves,
// and logs an error naming how many replicas are beyond its limit and
// the limit that would hold them all.
func TestRestartUnderLowerFileLimitSaysSo(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, dir)
	topic := topicName(t)
	createTopic(t, b, topic, 150, nil)
	b.stop()
	b.nofile = 256
	b.start()
	want := "the log dirs hold 150 partition replicas but the file-descriptor limit (RLIMIT_NOFILE 256) leaves room for 64: 86 will be offline (KAFKA_STORAGE_ERROR) until the limit is raised to at least 599"
	testutil.Eventually(t, 10*time.Second, func() error {
		data, err := os.ReadFile(b.logPath)
		if err != nil {
			return err
		}
		if !strings.Contains(string(data), want) {
			return fmt.Errorf("log has no %q", want)
		}
		return nil
	}, "the restart reports the replicas beyond capacity")

	// It serves: the replicas that opened take writes, the others answer
	// KAFKA_STORAGE_ERROR.
	cl := newClient(t, b, kgo.RecordRetries(0), kgo.RequestRetries(0), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var served, offline int
	for p := range int32(150) {
		err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte("x")}).FirstErr()
		switch {
		case err == nil:
			served++
		case errors.Is(err, kerr.KafkaStorageError):
			offline++
		default:
			t.Fatalf("produce to partition %d: %v", p, err)
		}
	}
	if served == 0 || offline == 0 {
		t.Fatalf("%d partitions served, %d offline; want some of each", served, offline)
	}
	t.Logf("after the restart under ulimit -n 256: %d partitions served, %d offline", served, offline)
}
