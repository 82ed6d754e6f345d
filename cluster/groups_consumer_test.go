package cluster

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kbroker/kbroker/internal/testutil"
)

// consumerLog records what KIP-848 members read and what they committed.
type consumerLog struct {
	t         *testing.T
	mu        sync.Mutex
	seen      map[tpo]int
	committed map[tpo]bool
}

func newConsumerLog(t *testing.T) *consumerLog {
	return &consumerLog{t: t, seen: map[tpo]int{}, committed: map[tpo]bool{}}
}

func (l *consumerLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.seen)
}

// startKIP848Consumer starts a franz-go member of the new consumer group
// protocol (ServerSideBalancer) that commits after every poll before it
// lets a revocation happen. A record read again after it was committed is
// an error.
func startKIP848Consumer(t *testing.T, seeds []string, groupID, topic string, log *consumerLog, opts ...kgo.Opt) *groupConsumer {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.ConsumerGroup(groupID),
		kgo.ServerSideBalancer(),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.RetryTimeout(60 * time.Second),
	}, opts...)...)
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
			log.mu.Lock()
			for _, r := range recs {
				k := tpo{r.Partition, r.Offset}
				if log.committed[k] {
					log.t.Errorf("committed record partition %d offset %d read again", k.partition, k.offset)
				}
				log.seen[k]++
			}
			log.mu.Unlock()
			if len(recs) > 0 {
				if err := cl.CommitRecords(ctx, recs...); err == nil {
					log.mu.Lock()
					for _, r := range recs {
						log.committed[tpo{r.Partition, r.Offset}] = true
					}
					log.mu.Unlock()
				} else if ctx.Err() == nil {
					t.Logf("commit: %v", err)
				}
			}
			cl.AllowRebalance()
		}
	}()
	return gc
}

// describeConsumerGroup sends ConsumerGroupDescribe to the group's
// coordinator.
func describeConsumerGroup(ctx context.Context, cl *kgo.Client, groupID string) (kmsg.ConsumerGroupDescribeResponseGroup, error) {
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{groupID}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return kmsg.ConsumerGroupDescribeResponseGroup{}, err
	}
	g := resp.Groups[0]
	return g, kerr.ErrorForCode(g.ErrorCode)
}

// memberAssignments is each member's assigned partitions of a described
// group.
func memberAssignments(g kmsg.ConsumerGroupDescribeResponseGroup) map[string][]int32 {
	out := map[string][]int32{}
	for _, m := range g.Members {
		for _, tp := range m.Assignment.TopicPartitions {
			out[m.MemberID] = append(out[m.MemberID], tp.Partitions...)
		}
	}
	return out
}

// stableWith reports whether the group is Stable with n members holding
// each partition once, sizes differing by at most one.
func stableWith(g kmsg.ConsumerGroupDescribeResponseGroup, n, partitions int) bool {
	if g.State != "Stable" || len(g.Members) != n {
		return false
	}
	seen := map[int32]bool{}
	lo, hi := partitions, 0
	for _, ps := range memberAssignments(g) {
		lo, hi = min(lo, len(ps)), max(hi, len(ps))
		for _, p := range ps {
			if seen[p] {
				return false
			}
			seen[p] = true
		}
	}
	return len(seen) == partitions && hi-lo <= 1 && len(memberAssignments(g)) == n
}

func TestKIP848ConsumersShareAndRebalance(t *testing.T) {
	node := startNode(t, "", "group.consumer.heartbeat.interval.ms=200", "offsets.topic.num.partitions=3")
	const topic = "kip848"
	createTopic(t, node.addr, topic, 6, nil)
	produceAll(t, node.addr, topic, 300)
	log := newConsumerLog(t)
	seeds := []string{node.addr}
	c1 := startKIP848Consumer(t, seeds, "g848", topic, log)
	c2 := startKIP848Consumer(t, seeds, "g848", topic, log)
	testutil.Eventually(t, 60*time.Second, func() bool { return log.count() >= 300 }, "300 records consumed by two members")

	adm := newAdmin(t, node.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(node.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	testutil.Eventually(t, 30*time.Second, func() bool {
		g, err := describeConsumerGroup(ctx, cl, "g848")
		return err == nil && stableWith(g, 2, 6)
	}, "a stable consumer group of 2 sharing 6 partitions")

	// A third member joins: partitions move only after their owner
	// revoked them, and nothing is read twice.
	joined := time.Now()
	c3 := startKIP848Consumer(t, seeds, "g848", topic, log)
	testutil.Eventually(t, 60*time.Second, func() bool {
		g, err := describeConsumerGroup(ctx, cl, "g848")
		return err == nil && stableWith(g, 3, 6)
	}, "a stable consumer group of 3")
	t.Logf("a third member joined; stable with 3 after %v", time.Since(joined))
	produceAll(t, node.addr, topic, 600)
	testutil.Eventually(t, 60*time.Second, func() bool { return log.count() >= 900 }, "900 records consumed")
	log.mu.Lock()
	for k, n := range log.seen {
		if n != 1 {
			t.Errorf("record %v read %d times", k, n)
		}
	}
	log.mu.Unlock()

	checkMemberEpochCommits(ctx, t, cl, "g848", topic)

	// The admin views show the type; a classic DescribeGroups of it is
	// GROUP_ID_NOT_FOUND (v6), as in Kafka.
	lg, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := lg["g848"]; !ok || g.GroupType != "consumer" || g.State != "Stable" {
		t.Fatalf("ListGroups: %+v", lg["g848"])
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{"g848"}
	dresp, err := dg.RequestWith(ctx, cl)
	if err != nil || dresp.Groups[0].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("DescribeGroups of a consumer group: %v %+v", err, dresp)
	}

	c1.stop()
	c2.stop()
	c3.stop()
	testutil.Eventually(t, 30*time.Second, func() bool {
		g, err := describeConsumerGroup(ctx, cl, "g848")
		return err == nil && g.State == "Empty"
	}, "the consumer group to be Empty after its members left")
	// An empty consumer group becomes classic when a classic member joins.
	classic := startGroupConsumer(t, node.addr, "g848", topic, 0, &consumedLog{seen: map[tpo]int{}, by: map[int]map[int32]bool{}})
	testutil.Eventually(t, 60*time.Second, func() bool {
		lg, err := adm.ListGroups(ctx)
		return err == nil && lg["g848"].GroupType == "classic"
	}, "the empty consumer group converted to classic")
	classic.stop()
	// And back: a KIP-848 member joins the empty classic group.
	testutil.Eventually(t, 30*time.Second, func() bool {
		lg, err := adm.ListGroups(ctx)
		return err == nil && lg["g848"].State == "Empty"
	}, "the classic group to be Empty")
	c4 := startKIP848Consumer(t, seeds, "g848", topic, newConsumerLog(t))
	defer c4.stop()
	testutil.Eventually(t, 60*time.Second, func() bool {
		g, err := describeConsumerGroup(ctx, cl, "g848")
		return err == nil && stableWith(g, 1, 6)
	}, "the empty classic group converted to a consumer group")
}

// Three brokers; the group coordinator's broker stops. The members go on
// with the new coordinator, which reloaded the group from
// __consumer_offsets: each keeps its assignment, and no committed record
// is read again.
func TestKIP848CoordinatorStops(t *testing.T) {
	if testing.Short() {
		t.Skip("three in-process brokers")
	}
	nodes := startQuorum(t, 3, nil, "offsets.topic.num.partitions=3", "group.consumer.heartbeat.interval.ms=200")
	seeds := []string{nodes[0].addr, nodes[1].addr, nodes[2].addr}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const topic = "kip848-3"
	if _, err := adm.CreateTopic(ctx, 6, 3, nil, topic); err != nil {
		t.Fatal(err)
	}
	produceAll(t, nodes[0].addr, topic, 300)
	log := newConsumerLog(t)
	c1 := startKIP848Consumer(t, seeds, "g848-3", topic, log)
	c2 := startKIP848Consumer(t, seeds, "g848-3", topic, log)
	defer c1.stop()
	defer c2.stop()
	testutil.Eventually(t, 90*time.Second, func() bool { return log.count() >= 300 }, "300 records consumed")
	var before map[string][]int32
	testutil.Eventually(t, 30*time.Second, func() bool {
		g, err := describeConsumerGroup(ctx, cl, "g848-3")
		if err == nil && stableWith(g, 2, 6) {
			before = memberAssignments(g)
			return true
		}
		return false
	}, "a stable group of 2")

	var coord int32 = -1
	testutil.Eventually(t, 30*time.Second, func() bool {
		for _, c := range adm.FindGroupCoordinators(ctx, "g848-3") {
			coord = c.NodeID
			return c.Err == nil
		}
		return false
	}, "the group coordinator is known")
	t.Logf("stopping the group coordinator, broker %d", coord)
	stopped := time.Now()
	nodes[coord-1].stop(t)

	var others []string
	for i, n := range nodes {
		if int32(i+1) != coord {
			others = append(others, n.addr)
		}
	}
	// A client that never knew the stopped coordinator.
	cl2, err := kgo.NewClient(kgo.SeedBrokers(others...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	produceAll(t, others[0], topic, 600)
	testutil.Eventually(t, 120*time.Second, func() bool { return log.count() >= 900 }, "900 records consumed after the coordinator stopped")
	t.Logf("600 records produced and consumed %v after the coordinator stopped", time.Since(stopped))
	testutil.Eventually(t, 60*time.Second, func() bool {
		g, err := describeConsumerGroup(ctx, cl2, "g848-3")
		after := memberAssignments(g)
		if err != nil || !stableWith(g, 2, 6) {
			t.Logf("group: %v state %s epoch %d members %v (before %v)", err, g.State, g.Epoch, after, before)
			return false
		}
		for id, ps := range before {
			if len(after[id]) != len(ps) {
				return false
			}
			for i := range ps {
				if after[id][i] != ps[i] {
					return false
				}
			}
		}
		return true
	}, "the members keep their assignment under the new coordinator")
}

// checkMemberEpochCommits checks OffsetCommit and OffsetFetch against a
// consumer group with members: a stale member epoch, an old version, an
// unknown topic id (v10).
func checkMemberEpochCommits(ctx context.Context, t *testing.T, cl *kgo.Client, groupID, topic string) {
	t.Helper()
	g, err := describeConsumerGroup(ctx, cl, groupID)
	if err != nil || len(g.Members) == 0 || len(g.Members[0].Assignment.TopicPartitions) == 0 {
		t.Fatalf("describe: %v %+v", err, g)
	}
	m := g.Members[0]
	tid := m.Assignment.TopicPartitions[0].TopicID
	commit := func(version int16, epoch int32, id [16]byte) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version = version
		req.Group, req.MemberID, req.Generation = groupID, m.MemberID, epoch
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic, rt.TopicID = topic, id
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = m.Assignment.TopicPartitions[0].Partitions[0], 0
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		// kgo sends the highest version both sides know, up to MaxVersions.
		vcl := cl
		if version < 10 {
			v := kversion.Stable()
			v.SetMaxKeyVersion(int16(kmsg.OffsetCommit), version)
			var err error
			if vcl, err = kgo.NewClient(kgo.SeedBrokers(cl.OptValue(kgo.SeedBrokers).([]string)...), kgo.MaxVersions(v)); err != nil {
				t.Fatal(err)
			}
			defer vcl.Close()
		}
		resp, err := req.RequestWith(ctx, vcl)
		if err != nil {
			t.Fatalf("OffsetCommit v%d: %v", version, err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	for _, tc := range []struct {
		name    string
		version int16
		epoch   int32
		id      [16]byte
		want    *kerr.Error
	}{
		{"stale member epoch", 10, m.MemberEpoch + 7, tid, kerr.StaleMemberEpoch},
		{"version before 9", 8, m.MemberEpoch, tid, kerr.UnsupportedVersion},
		{"unknown topic id", 10, m.MemberEpoch, [16]byte{0xff}, kerr.UnknownTopicID},
	} {
		if got := commit(tc.version, tc.epoch, tc.id); got != tc.want.Code {
			t.Errorf("%s: OffsetCommit error %v, want %v", tc.name, kerr.ErrorForCode(got), tc.want)
		}
	}
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fg := kmsg.NewOffsetFetchRequestGroup()
	fg.Group, fg.MemberID, fg.MemberEpoch = groupID, &m.MemberID, m.MemberEpoch+7
	fetch.Groups = append(fetch.Groups, fg)
	fresp, err := fetch.RequestWith(ctx, cl)
	if err != nil || fresp.Groups[0].ErrorCode != kerr.StaleMemberEpoch.Code {
		t.Errorf("OffsetFetch with a stale member epoch: %v %+v", err, fresp)
	}
	// v10 by topic id, with the member's real epoch.
	fg.MemberEpoch = m.MemberEpoch
	ft := kmsg.NewOffsetFetchRequestGroupTopic()
	ft.TopicID, ft.Partitions = tid, m.Assignment.TopicPartitions[0].Partitions
	fg.Topics = append(fg.Topics, ft)
	fetch.Groups[0] = fg
	fresp, err = fetch.RequestWith(ctx, cl)
	if err != nil || fresp.Version < 10 || fresp.Groups[0].ErrorCode != 0 || len(fresp.Groups[0].Topics) != 1 || fresp.Groups[0].Topics[0].TopicID != tid {
		t.Errorf("OffsetFetch v10 by topic id: %v %+v", err, fresp)
	}
}
