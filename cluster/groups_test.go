package cluster

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testutil"
)

// groupConsumer is one franz-go group member that records what it reads
// and commits after every poll, before it lets a rebalance happen.
type groupConsumer struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
}

type consumedLog struct {
	mu   sync.Mutex
	seen map[tpo]int            // how many times each record was read
	by   map[int]map[int32]bool // consumer -> partitions it read after mark
	mark bool
}

func (l *consumedLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.seen)
}

func startGroupConsumer(t *testing.T, addr, groupID, topic string, idx int, log *consumedLog) *groupConsumer {
	t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.ConsumerGroup(groupID),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.SessionTimeout(10*time.Second),
		kgo.HeartbeatInterval(200*time.Millisecond),
	)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	gc := &groupConsumer{cl: cl, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(gc.done)
		for ctx.Err() == nil {
			fs := cl.PollRecords(ctx, 50)
			var recs []*kgo.Record
			fs.EachRecord(func(r *kgo.Record) { recs = append(recs, r) })
			if len(recs) > 0 {
				if err := cl.CommitRecords(ctx, recs...); err != nil && ctx.Err() == nil {
					t.Errorf("consumer %d commit: %v", idx, err)
				}
				log.mu.Lock()
				for _, r := range recs {
					log.seen[tpo{r.Partition, r.Offset}]++
					if log.mark {
						if log.by[idx] == nil {
							log.by[idx] = map[int32]bool{}
						}
						log.by[idx][r.Partition] = true
					}
				}
				log.mu.Unlock()
			}
			cl.AllowRebalance()
		}
	}()
	return gc
}

// stop leaves the group (franz-go's Close commits nothing here: every
// poll was committed) and waits for the poll loop.
func (gc *groupConsumer) stop() {
	gc.cancel()
	<-gc.done
	gc.cl.Close()
}

func TestConsumerGroupsEndToEnd(t *testing.T) {
	sets := []string{"group.initial.rebalance.delay.ms=200"}
	dir := t.TempDir()
	node := startNode(t, dir, sets...)
	const topic = "grouped"
	createTopic(t, node.addr, topic, 6, nil)
	produceAll(t, node.addr, topic, 300)

	log := &consumedLog{seen: map[tpo]int{}, by: map[int]map[int32]bool{}}
	var consumers []*groupConsumer
	for i := range 3 {
		consumers = append(consumers, startGroupConsumer(t, node.addr, "g1", topic, i, log))
	}
	testutil.Eventually(t, 60*time.Second, func() bool { return log.count() >= 300 }, "300 records consumed by the group")

	// Every member has some partitions.
	adm := newAdmin(t, node.addr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	testutil.Eventually(t, 30*time.Second, func() bool {
		d, err := adm.DescribeGroups(ctx, "g1")
		if err != nil {
			return false
		}
		g := d["g1"]
		if g.State != "Stable" || len(g.Members) != 3 {
			return false
		}
		for _, m := range g.Members {
			ca, ok := m.Assigned.AsConsumer()
			if !ok || len(ca.Topics) == 0 || len(ca.Topics[0].Partitions) != 2 {
				return false
			}
		}
		return true
	}, "a stable group of 3")

	// One leaves: the two others take over all six partitions.
	left := time.Now()
	consumers[2].stop()
	testutil.Eventually(t, 60*time.Second, func() bool {
		d, err := adm.DescribeGroups(ctx, "g1")
		return err == nil && d["g1"].State == "Stable" && len(d["g1"].Members) == 2
	}, "a stable group of 2")
	t.Logf("rebalance after a member left: %v", time.Since(left))
	log.mu.Lock()
	log.mark = true
	log.mu.Unlock()
	produceAll(t, node.addr, topic, 600)
	testutil.Eventually(t, 60*time.Second, func() bool { return log.count() >= 900 }, "900 records consumed")
	log.mu.Lock()
	covered := map[int32]bool{}
	for idx, ps := range log.by {
		if idx == 2 {
			t.Errorf("the departed consumer read %v", ps)
		}
		for p := range ps {
			covered[p] = true
		}
	}
	for k, n := range log.seen {
		if n != 1 {
			t.Errorf("record %v read %d times", k, n)
		}
	}
	log.mu.Unlock()
	if len(covered) != 6 {
		t.Errorf("after the leave, partitions %v were read, want all 6", covered)
	}
	consumers[0].stop()
	consumers[1].stop()

	// Admin views of the now empty group.
	testutil.Eventually(t, 30*time.Second, func() bool {
		d, err := adm.DescribeGroups(ctx, "g1")
		return err == nil && d["g1"].State == "Empty"
	}, "the group to be Empty")
	lg, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := lg["g1"]; !ok || g.ProtocolType != "consumer" || g.State != "Empty" {
		t.Fatalf("ListGroups: %+v, want g1 Empty with protocol type consumer", lg)
	}
	// An Empty group keeps its protocol type, as in Kafka.
	if d, err := adm.DescribeGroups(ctx, "g1"); err != nil || d["g1"].ProtocolType != "consumer" {
		t.Fatalf("DescribeGroups of the Empty group: %+v %v, want protocol type consumer", d["g1"], err)
	}
	checkCommitted := func(want int64) {
		t.Helper()
		offs, err := adm.FetchOffsets(ctx, "g1")
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		offs.Each(func(o kadm.OffsetResponse) {
			if o.Err != nil {
				t.Errorf("offset %s/%d: %v", o.Topic, o.Partition, o.Err)
			}
			sum += o.At
		})
		if sum != want {
			t.Fatalf("committed offsets sum to %d, want %d", sum, want)
		}
	}
	checkCommitted(900)

	// Restart: the committed offsets survive and the group resumes there.
	node.stop(t)
	node = startNode(t, dir, sets...)
	adm = newAdmin(t, node.addr)
	testutil.Eventually(t, 30*time.Second, func() bool {
		_, err := adm.FetchOffsets(ctx, "g1")
		return err == nil
	}, "the coordinator to load")
	checkCommitted(900)
	produceAll(t, node.addr, topic, 60)
	log.mu.Lock()
	log.mark = false
	log.mu.Unlock()
	c := startGroupConsumer(t, node.addr, "g1", topic, 3, log)
	testutil.Eventually(t, 60*time.Second, func() bool { return log.count() >= 960 }, "the 60 new records")
	c.stop()
	log.mu.Lock()
	for k, n := range log.seen {
		if n != 1 {
			t.Errorf("record %v read %d times", k, n)
		}
	}
	log.mu.Unlock()
	checkCommitted(960)

	// DeleteGroups removes the group and its offsets.
	testutil.Eventually(t, 30*time.Second, func() bool {
		d, err := adm.DescribeGroups(ctx, "g1")
		return err == nil && d["g1"].State == "Empty"
	}, "the group to be Empty again")
	dr, err := adm.DeleteGroups(ctx, "g1")
	if err != nil || dr["g1"].Err != nil {
		t.Fatalf("DeleteGroups: %v %v", err, dr["g1"].Err)
	}
	offs, err := adm.FetchOffsets(ctx, "g1")
	if err != nil || len(offs) != 0 {
		t.Fatalf("offsets after delete: %v %v", offs, err)
	}
	dr, _ = adm.DeleteGroups(ctx, "g1")
	if !errors.Is(dr["g1"].Err, kerr.GroupIDNotFound) {
		t.Fatalf("second delete: %v", dr["g1"].Err)
	}
}

func TestSimpleConsumerCommitAndOffsetDelete(t *testing.T) {
	node := startNode(t, "")
	createTopic(t, node.addr, "simple", 2, nil)
	adm := newAdmin(t, node.addr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: "simple", Partition: 0, At: 5, LeaderEpoch: -1, Metadata: "m"})
	os.Add(kadm.Offset{Topic: "simple", Partition: 1, At: 7, LeaderEpoch: -1})
	var res kadm.OffsetResponses
	testutil.Eventually(t, 30*time.Second, func() bool {
		var err error
		res, err = adm.CommitOffsets(ctx, "simple-g", os)
		return err == nil && res.Error() == nil
	}, "a simple commit")
	got, err := adm.FetchOffsets(ctx, "simple-g")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := got.Lookup("simple", 0); o.At != 5 || o.Metadata != "m" {
		t.Fatalf("fetched %+v", o)
	}
	ts := kadm.TopicsSet{}
	ts.Add("simple", 0)
	dres, err := adm.DeleteOffsets(ctx, "simple-g", ts)
	if err != nil || dres.Error() != nil {
		t.Fatalf("DeleteOffsets: %v %v", err, dres.Error())
	}
	got, _ = adm.FetchOffsets(ctx, "simple-g")
	if _, ok := got.Lookup("simple", 0); ok {
		t.Fatalf("offset of partition 0 still there: %v", got)
	}
	if o, _ := got.Lookup("simple", 1); o.At != 7 {
		t.Fatalf("partition 1: %+v", o)
	}

	// Old and new layouts of OffsetFetch and FindCoordinator.
	cl, err := kgo.NewClient(kgo.SeedBrokers(node.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, v := range []int16{1, 3, 7, 8} {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = v
		if v < 8 {
			req.Group = "simple-g"
			req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "simple", Partitions: []int32{1}}}
		} else {
			req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "simple-g", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "simple", Partitions: []int32{1}}}}}
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("OffsetFetch v%d: %v", v, err)
		}
		var at int64
		if v < 8 {
			at = resp.Topics[0].Partitions[0].Offset
		} else {
			at = resp.Groups[0].Topics[0].Partitions[0].Offset
		}
		if at != 7 {
			t.Fatalf("OffsetFetch v%d: offset %d", v, at)
		}
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.Version = 4
	fc.CoordinatorType = 1
	fc.CoordinatorKeys = []string{"txn"}
	fresp, err := fc.RequestWith(ctx, cl)
	if err != nil || fresp.Coordinators[0].ErrorCode != 0 {
		t.Fatalf("transactional FindCoordinator: %v %+v", err, fresp)
	}
}

func newAdmin(t *testing.T, addr string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}
