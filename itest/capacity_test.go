package itest

import (
	"context"
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

// TestOutOfFilesAtRunTimeGivesBackIdleFiles: when the broker's
// file-descriptor limit is lowered at run time (prlimit) below what its
// logs were told they may hold, a CreateTopics of 100 partitions (300
// segment files) into the ~40 descriptors left still opens every
// partition whole (no directory without its files): the logs close idle
// files to make room (storage/filecache.go) instead of the partitions
// going offline. Each partition then takes a produce, as does an existing
// topic, and the process stays within the lowered limit.
func TestOutOfFilesAtRunTimeGivesBackIdleFiles(t *testing.T) {
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
	adm := kadm.NewClient(newClient(t, b))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// The clients' connections (admin, produce) are open before the limit
	// drops: a new one could not be accepted under it.
	live := topicName(t) + "-live"
	createTopic(t, b, live, 1, nil)
	cl := newClient(t, b, kgo.RecordRetries(0), kgo.RequestRetries(0), kgo.DefaultProduceTopic(live),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.ProduceSync(ctx, kgo.StringRecord("before")).FirstErr(); err != nil {
		t.Fatal(err)
	}

	const partitions = 100
	limit := openFDs(t, pid) + 40
	setNofile(strconv.Itoa(limit))
	defer setNofile(soft)
	topic := topicName(t)
	resps, err := adm.CreateTopics(ctx, partitions, 1, nil, topic)
	if err != nil || resps[topic].Err != nil {
		t.Fatalf("CreateTopics: %v %v", err, resps[topic].Err)
	}
	var opened map[int32]bool
	err = testutil.Poll(ctx, 30*time.Second, func() error {
		var err error
		if opened, err = partitionDirs(dir, topic); err != nil {
			return err
		}
		if len(opened) < partitions {
			return fmt.Errorf("%d of %d partitions opened", len(opened), partitions)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("under a limit of %d descriptors: %v", limit, err)
	}
	err = testutil.Poll(ctx, 30*time.Second, func() error {
		for p := range int32(partitions) {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte("x")}).FirstErr(); err != nil {
				return fmt.Errorf("produce to partition %d: %w", p, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, kgo.StringRecord("after")).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", live, err)
	}
	if n := openFDs(t, pid); n > limit {
		t.Fatalf("%d descriptors open under a limit of %d", n, limit)
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
