package itest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kbroker/kbroker/internal/testutil"
	"github.com/kbroker/kbroker/metadata/features"
)

// upgradeFrom is the release the rolling upgrade starts from: v0.2.0,
// the last build before feature levels (CHANGELOG). The commit stands in
// for the tag in a clone without tags.
const (
	upgradeFromTag    = "v0.2.0"
	upgradeFromCommit = "f59b143"
)

// buildRelease builds the kbroker binary of an earlier release from this
// repository's git history into a temporary directory. A checkout
// without that history (a shallow clone) cannot build it: the test is
// skipped, saying how to get it.
func buildRelease(t *testing.T) string {
	t.Helper()
	root := testutil.ModuleRoot(t)
	commit := ""
	for _, ref := range []string{upgradeFromTag, upgradeFromCommit} {
		rev, err := exec.Command("git", "-C", root, "rev-parse", "--verify", "--quiet", ref+"^{commit}").Output()
		if err == nil {
			commit = strings.TrimSpace(string(rev))
			break
		}
	}
	if commit == "" {
		t.Skipf("the release %s (%s) is not in this checkout's git history (a shallow clone, or no git): "+
			"`git fetch --unshallow --tags` brings it, and this test then builds it", upgradeFromTag, upgradeFromCommit)
	}
	src := t.TempDir()
	archive := exec.Command("git", "-C", root, "archive", "--format=tar", commit)
	untar := exec.Command("tar", "-x", "-C", src)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	untar.Stdin = pipe
	if err := untar.Start(); err != nil {
		t.Fatal(err)
	}
	if err := archive.Run(); err != nil {
		t.Fatalf("git archive %s: %v", commit, err)
	}
	if err := untar.Wait(); err != nil {
		t.Fatalf("unpacking %s: %v", commit, err)
	}
	bin := filepath.Join(t.TempDir(), "kbroker-"+upgradeFromTag)
	build := exec.Command("go", "build", "-o", bin, "./cmd/kbroker")
	build.Dir = src
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", upgradeFromTag, err, out)
	}
	t.Logf("built %s (%s)", upgradeFromTag, commit[:12])
	return bin
}

// A cluster of the earlier release is upgraded one node at a time to
// this build under an idempotent acks=all load, a consumer group and
// transactions; one node is first upgraded and rolled back before the
// new level is finalized; then metadata.version is finalized at this
// build's level. Nothing acknowledged is lost or duplicated, committed
// offsets survive, committed transactions are read and aborted ones are
// not, and once the level is finalized the earlier binary refuses to
// start, saying why.
func TestRollingUpgrade(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an earlier release and rolls a three-node cluster")
	}
	old := buildRelease(t)
	c := startClusterOn(t, old, 3, "min.insync.replicas=2")
	keepLogs(t, c)
	topic := topicName(t)
	createReplicated(t, c, topic, 6, 3, nil)
	c.waitConverged(45*time.Second, "full ISR on the earlier release", fullISR(c, topic, 6, 3))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// Committed offsets from before the upgrade.
	adm := kadm.NewClient(clusterClient(t, c))
	const group = "upgrade-group"
	before := kadm.Offsets{}
	for p := int32(0); p < 6; p++ {
		before.AddOffset(topic, p, int64(p), -1)
	}
	if r, err := adm.CommitOffsets(ctx, group, before); err != nil || r.Error() != nil {
		t.Fatalf("committing offsets: %v %v", err, r.Error())
	}

	load := startLoad(t, c, topic, 5, 10*time.Millisecond, 1_000_000)
	txns := startTransactions(t, c, topicName(t)+"-txn")
	// A consumer group reads the load through the roll, committing as it
	// goes (franz-go's autocommit).
	const liveGroup = "upgrade-live"
	consumer := clusterClient(t, c, kgo.ConsumerGroup(liveGroup), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.AutoCommitInterval(500*time.Millisecond))
	var consumed sync.WaitGroup
	var consumedRecords atomic.Int64
	consumeCtx, stopConsuming := context.WithCancel(ctx)
	consumed.Go(func() {
		for consumeCtx.Err() == nil {
			fs := consumer.PollFetches(consumeCtx)
			consumedRecords.Add(int64(fs.NumRecords()))
		}
	})
	testutil.Eventually(t, 60*time.Second, func() bool { return consumedRecords.Load() > 0 }, "the live group to read")

	roll := func(b *broker, bin, what string) {
		t.Helper()
		b.stop()
		b.bin = bin
		b.start()
		c.waitConverged(60*time.Second, what, fullISR(c, topic, 6, 3))
		t.Logf("%s: %d acknowledged so far", what, load.acks.Count())
	}
	// Upgrade node 3, then roll it back: allowed before finalizing.
	roll(c.node(3), "", "node 3 upgraded")
	roll(c.node(3), old, "node 3 rolled back to "+upgradeFromTag)
	for id := int32(1); id <= 3; id++ {
		roll(c.node(id), "", fmt.Sprintf("node %d upgraded", id))
	}

	// Finalize this build's metadata.version.
	res, err := adm.UpdateFeatures(ctx, false, kadm.FeatureUpdate{
		Feature: features.MetadataVersion, MaxVersionLevel: features.LatestMetadataVersion, UpgradeType: 1})
	if err != nil || res.Error() != nil {
		t.Fatalf("finalizing metadata.version %d: %v %v", features.LatestMetadataVersion, err, res.Error())
	}
	time.Sleep(2 * time.Second) // load on the finalized level

	load.finish(t)
	committedTxns, abortedTxns := txns.finish(t)
	testutil.Eventually(t, 60*time.Second, func() bool { return consumedRecords.Load() >= int64(load.acks.Count()) },
		"the live group to read every acknowledged record")
	stopConsuming()
	consumed.Wait()
	if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
		t.Errorf("the live group's last commit: %v", err)
	}
	// (A kadm call right after the roll once failed with EOF from a
	// connection the roll had broken; the data is what is checked here.)
	var live kadm.OffsetResponses
	err = testutil.Poll(ctx, 20*time.Second, func() error {
		var err error
		if live, err = adm.FetchOffsets(ctx, liveGroup); err != nil {
			t.Logf("fetching the live group's offsets: %v", err)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	total := int64(0)
	live.Each(func(o kadm.OffsetResponse) { total += o.At })
	t.Logf("the live consumer group read %d records and committed offsets summing to %d through the upgrade", consumedRecords.Load(), total)
	if total != int64(load.acks.Count()) {
		t.Errorf("the live group's committed offsets sum to %d, with %d records acknowledged", total, load.acks.Count())
	}
	checkLogOnce(t, load.acks, consumeAll(t, c.node(1), topic))
	txns.check(t, c, committedTxns, abortedTxns)

	fetched, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 6; p++ {
		o, ok := fetched.Lookup(topic, p)
		if !ok || o.At != int64(p) {
			t.Errorf("committed offset of partition %d after the upgrade: %+v (found %v), want %d", p, o, ok, p)
		}
	}

	// After finalizing, the earlier release refuses to start.
	b := c.node(3)
	b.stop()
	b.bin = old
	b.launch()
	err = b.ready()
	if !errors.Is(err, errExited) {
		t.Fatalf("%s started on a cluster finalized at metadata.version %d: %v", upgradeFromTag, features.LatestMetadataVersion, err)
	}
	tail := b.logTail(logTailLines)
	if !strings.Contains(tail, "metadata.version") && !strings.Contains(tail, "snapshot") {
		t.Errorf("%s exited without naming the finalized level; log tail:\n%s", upgradeFromTag, tail)
	}
	for _, line := range strings.Split(tail, "\n") {
		if strings.Contains(line, "metadata.version") || strings.Contains(line, "snapshot") {
			t.Logf("%s refused to start: %s", upgradeFromTag, line)
			break
		}
	}
	b.bin = ""
	b.start()
}

// txnLoad commits and aborts small transactions to a topic while the
// cluster rolls, and remembers which did which.
type txnLoad struct {
	topic     string
	cl        *kgo.Client
	stop      chan struct{}
	done      chan struct{}
	mu        sync.Mutex
	committed map[string]bool // value -> in a committed transaction
	aborted   map[string]bool
	failed    int
}

func startTransactions(t *testing.T, c *testCluster, topic string) *txnLoad {
	t.Helper()
	createReplicated(t, c, topic, 3, 3, nil)
	l := &txnLoad{
		topic: topic,
		cl: clusterClient(t, c, kgo.TransactionalID("upgrade-txn"), kgo.DefaultProduceTopic(topic),
			kgo.TransactionTimeout(20*time.Second)),
		stop: make(chan struct{}), done: make(chan struct{}),
		committed: map[string]bool{}, aborted: map[string]bool{},
	}
	go func() {
		defer close(l.done)
		for i := 0; ; i++ {
			select {
			case <-l.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			l.one(i)
		}
	}()
	return l
}

// one runs transaction i: three records, aborted when i is a multiple of
// five, committed otherwise; a transaction the roll breaks counts as
// failed and is aborted.
func (l *txnLoad) one(i int) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := l.cl.BeginTransaction(); err != nil {
		l.note(nil, false, true)
		return
	}
	var vals []string
	ok := true
	for j := range 3 {
		v := fmt.Sprintf("txn-%05d-%d", i, j)
		if err := l.cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			ok = false
			break
		}
		vals = append(vals, v)
	}
	commit := ok && i%5 != 0
	if err := l.cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		// The outcome is unknown to this client: leave those records out
		// of both sets (read_committed may or may not show them), and
		// make sure the client is out of the transaction.
		l.note(nil, false, true)
		_ = l.cl.AbortBufferedRecords(ctx)
		_ = l.cl.EndTransaction(ctx, kgo.TryAbort)
		return
	}
	l.note(vals, commit, !ok)
}

func (l *txnLoad) note(vals []string, committed, failed bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if failed {
		l.failed++
	}
	for _, v := range vals {
		if committed {
			l.committed[v] = true
		} else {
			l.aborted[v] = true
		}
	}
}

func (l *txnLoad) finish(t *testing.T) (committed, aborted map[string]bool) {
	t.Helper()
	close(l.stop)
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	t.Logf("transactions: %d records committed, %d aborted, %d transactions broken by the roll",
		len(l.committed), len(l.aborted), l.failed)
	if len(l.committed) == 0 {
		t.Error("no transaction committed during the upgrade")
	}
	return l.committed, l.aborted
}

// check reads the transactional topic read_committed: every committed
// record once, no aborted one.
func (l *txnLoad) check(t *testing.T, c *testCluster, committed, aborted map[string]bool) {
	t.Helper()
	cl := clusterClient(t, c, kgo.ConsumeTopics(l.topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]int{}
	found := 0
	deadline := time.Now().Add(60 * time.Second)
	// Until every committed record is read, then one more poll for any
	// record that should not be there.
	for extra := 0; extra < 2 && time.Now().Before(deadline); {
		if found == len(committed) {
			extra++
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			if seen[v]++; seen[v] == 1 && committed[v] {
				found++
			}
		})
	}
	for v := range committed {
		if seen[v] != 1 {
			t.Errorf("committed transactional record %s read %d times", v, seen[v])
		}
	}
	for v := range aborted {
		if seen[v] != 0 {
			t.Errorf("aborted transactional record %s read %d times", v, seen[v])
		}
	}
}
