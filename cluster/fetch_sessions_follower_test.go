package cluster

import (
	"context"
	"slices"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/kafkatest"
	"github.com/kbroker/kbroker/internal/testutil"
	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/replication"
)

// A follower in a fetch session leaves out of its incremental requests
// every partition whose fetch offset did not change; the leader must
// still count each of them as fetched at its cached offset. Otherwise an
// idle partition's follower looks stuck: it leaves the ISR after
// replica.lag.time.max.ms although it fetches all the time, and a
// partition that gets a record while left out of the requests never has
// its high watermark move (acks=all hangs).
//
// The follower here is this test speaking Kafka's protocol as broker 9
// (registered, never heartbeating: the controller would fence it only
// after broker.session.timeout.ms), so what it sends does not depend on
// kbroker's own fetcher: after the opening full request it names only
// partition 0, which gets a record every round, and never partition 1,
// for four times replica.lag.time.max.ms. Then partition 1 gets an
// acks=all record while still left out, which the session must serve and
// commit. The control at the end stops fetching and sees partition 1
// leave the ISR within the same lag, so the first part would have seen
// it too.
//
// A leader that read only the partitions an incremental request names
// fails this within 1.5 s (partition 1 leaves the ISR), and the acks=all
// produce of TestTransactionsThreeBrokersCoordinatorStops hangs with it.
func TestFollowerFetchSessionIdlePartitionStaysInISR(t *testing.T) {
	const lag = time.Second
	node := startNode(t, "", "broker.session.timeout.ms=120000", "replica.lag.time.max.ms=1000")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store := node.store
	if err := store.RegisterBroker(ctx, metadata.BrokerRegistration{ID: 9, IncarnationID: "session-follower",
		Endpoints: []metadata.Endpoint{{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: 1, SecurityProtocol: "PLAINTEXT"}}}); err != nil {
		t.Fatal(err)
	}
	const topic = "idle-session"
	if errs := store.CreateTopics(ctx, []metadata.TopicSpec{{Name: topic, NumPartitions: -1, ReplicationFactor: -1,
		Assignments: map[int32][]int32{0: {1, 9}, 1: {1, 9}}}}, false); errs[0] != nil {
		t.Fatal(errs[0])
	}
	parts := make([]*replication.Partition, 2)
	for i := range parts {
		tp := replication.TopicPartition{Topic: topic, Partition: int32(i)}
		testutil.Eventually(t, 10*time.Second, func() bool {
			p, err := node.replicas.LeaderPartition(tp)
			parts[i] = p
			return err == nil && slices.Equal(p.State().ISR, []int32{1, 9})
		}, "broker 1 to lead %v with ISR [1 9]", tp)
	}
	leaderEpoch := parts[0].State().LeaderEpoch

	follower := kafkatest.Dial(t, node.addr)
	offsets := map[int32]int64{0: 0, 1: 0}
	fetch := func(id, epoch int32, named ...int32) *kmsg.FetchResponse {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.ReplicaID = 12, 9
		req.SessionID, req.SessionEpoch = id, epoch
		req.MaxBytes, req.MinBytes, req.MaxWaitMillis = 1<<20, 1, 50
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = topic
		for _, p := range named {
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = p, offsets[p], 1<<20
			fp.CurrentLeaderEpoch, fp.LastFetchedEpoch = leaderEpoch, -1
			ft.Partitions = append(ft.Partitions, fp)
		}
		if len(named) > 0 {
			req.Topics = append(req.Topics, ft)
		}
		resp := follower.RoundTrip(req).(*kmsg.FetchResponse)
		if resp.ErrorCode != 0 {
			t.Fatalf("fetch (%d, %d): %v", id, epoch, kerr.ErrorForCode(resp.ErrorCode))
		}
		return resp
	}
	// apply "appends" what the answer brought: the fetch offset becomes
	// the leader's log end offset (nothing else writes meanwhile), and
	// reports the partitions whose offset moved, to name next time.
	apply := func(resp *kmsg.FetchResponse) (moved []int32) {
		t.Helper()
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode != 0 {
					t.Fatalf("partition %d: %v", rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
				}
				if len(rp.RecordBatches) > 0 {
					offsets[rp.Partition] = parts[rp.Partition].LogEndOffset()
					moved = append(moved, rp.Partition)
				}
			}
		}
		return moved
	}

	open := fetch(0, 0, 0, 1)
	id := open.SessionID
	if id == 0 {
		t.Fatal("the full fetch opened no session")
	}
	apply(open)
	epoch := int32(1)
	producer := kafkatest.Dial(t, node.addr)
	produce := func(p int32, acks int16) int32 {
		req := kafkatest.ProduceRequest(9, acks, topic, map[int32][]byte{0: testBatch(t, 1, -1, -1, -1)})
		req.Topics[0].Partitions[0].Partition = p
		req.TimeoutMillis = 20_000
		return producer.Send(req)
	}
	named := []int32{}
	rounds := 0
	for start := time.Now(); time.Since(start) < 4*lag; rounds++ {
		presp := kmsg.NewPtrProduceResponse()
		presp.Version = 9
		producer.Recv(produce(0, 1), presp)
		if slices.Contains(named, 1) {
			t.Fatal("the test named partition 1")
		}
		named = apply(fetch(id, epoch, named...))
		epoch++
		if isr := parts[1].State().ISR; !slices.Equal(isr, []int32{1, 9}) {
			t.Fatalf("after %v of incremental fetches leaving it out, partition 1's ISR is %v, want [1 9]", time.Since(start), isr)
		}
	}
	// The last answer's records are reported by the next fetch.
	named = apply(fetch(id, epoch, named...))
	epoch++
	if hw := parts[0].HighWatermark(); len(named) > 0 || hw != offsets[0] {
		t.Fatalf("partition 0 high watermark %d, want the follower's offset %d", hw, offsets[0])
	}
	t.Logf("%d incremental fetches over %v, partition 1 left out of all, still in the ISR", rounds, 4*lag)

	// An acks=all record on partition 1 while the follower leaves it out:
	// the session reads it at its cached offset, answers the record, the
	// follower names it at its new offset, and the produce commits.
	corr := produce(1, -1)
	testutil.Eventually(t, 10*time.Second, func() bool { return parts[1].LogEndOffset() == 1 }, "the acks=all record to be appended")
	for i := 0; ; i++ {
		named = apply(fetch(id, epoch, named...))
		epoch++
		if parts[1].HighWatermark() == 1 {
			break
		}
		if i == 20 {
			t.Fatalf("partition 1 high watermark %d after %d incremental fetches, want 1", parts[1].HighWatermark(), i+1)
		}
	}
	presp := kmsg.NewPtrProduceResponse()
	presp.Version = 9
	producer.Recv(corr, presp)
	if code := presp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("acks=all produce to partition 1: %v", kerr.ErrorForCode(code))
	}

	// Control: a follower that stops fetching leaves the ISR.
	testutil.Eventually(t, 10*lag, func() bool {
		return slices.Equal(parts[1].State().ISR, []int32{1})
	}, "partition 1's ISR to shrink once the follower stopped fetching")
}

// A follower with many idle partitions sends incremental fetches naming
// none of them, and while a few partitions get records it names only
// those: the request is O(changed), not O(partitions).
//
// The busy rounds are acks=all, so they also check the follower's side
// of the contract: a fetcher that applied only the partitions it named
// (ignoring records the session sent for the others), or that sent
// nothing while nothing had changed, never lets the high watermark move
// and the produce times out; both stall
// TestTransactionsThreeBrokersCoordinatorStops the same way.
func TestFollowerFetchSessionRequestsAreIncremental(t *testing.T) {
	const n = 100
	nodes := startPair(t, "replica.fetch.wait.max.ms=100")
	leader, follower := nodes[0], nodes[1]
	cl, err := kgo.NewClient(kgo.SeedBrokers(leader.addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const topic = "many"
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, -1, -1
	for p := range int32(n) {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = p, []int32{1, 2}
		ct.ReplicaAssignment = append(ct.ReplicaAssignment, ra)
	}
	create.Topics = append(create.Topics, ct)
	create.TimeoutMillis = 20_000
	cresp, err := create.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := cresp.Topics[0].ErrorCode; code != 0 {
		t.Fatalf("create topic: %v", kerr.ErrorForCode(code))
	}
	testutil.Eventually(t, 30*time.Second, func() bool {
		for p := range int32(n) {
			part, err := leader.replicas.LeaderPartition(replication.TopicPartition{Topic: topic, Partition: p})
			if err != nil || len(part.State().ISR) != 2 {
				return false
			}
		}
		return true
	}, "broker 1 to lead all %d partitions with ISR [1 2]", n)

	// The ISR is full from the creation on; wait for the follower's
	// session to be open and in use.
	testutil.Eventually(t, 20*time.Second, func() bool {
		_, cached, _ := leader.fetchSessions.Stats()
		return cached >= n
	}, "the follower's session to hold all %d partitions", n)

	// Idle: a dozen incremental fetches name nothing.
	idle0 := follower.replicas.FollowerFetchStats()
	testutil.Eventually(t, 20*time.Second, func() bool {
		return follower.replicas.FollowerFetchStats().IncrementalRequests >= idle0.IncrementalRequests+12
	}, "a dozen incremental fetches")
	idle1 := follower.replicas.FollowerFetchStats()
	idleReqs := idle1.IncrementalRequests - idle0.IncrementalRequests
	idleNamed := idle1.IncrementalPartitions - idle0.IncrementalPartitions
	if idle1.FullRequests != idle0.FullRequests || idleNamed != 0 {
		t.Fatalf("idle: %d full requests, %d incremental naming %d partitions; want no full request and none named",
			idle1.FullRequests-idle0.FullRequests, idleReqs, idleNamed)
	}

	// Busy: three partitions get acks=all records, twenty rounds.
	busy := []int32{3, 41, 97}
	for round := range 20 {
		var recs []*kgo.Record
		for _, p := range busy {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte{byte(round)}})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	busy1 := follower.replicas.FollowerFetchStats()
	busyReqs := busy1.IncrementalRequests - idle1.IncrementalRequests
	busyNamed := busy1.IncrementalPartitions - idle1.IncrementalPartitions
	if busy1.FullRequests != idle1.FullRequests || busy1.SessionResets != 0 {
		t.Fatalf("busy: %d full requests, %d session resets; want none", busy1.FullRequests-idle1.FullRequests, busy1.SessionResets)
	}
	if busyReqs == 0 || busyNamed > uint64(len(busy))*busyReqs || busyNamed < 20 {
		t.Fatalf("busy: %d incremental requests named %d partitions; want at most %d per request, and at least one per record",
			busyReqs, busyNamed, len(busy))
	}
	// What an operator sees: the follower's requests by type and the
	// leader's session.
	fmfs, err := follower.metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if got := testutilCount(fmfs, "kbroker_replica_fetch_requests_total"); got < float64(busy1.FullRequests+busy1.IncrementalRequests) {
		t.Errorf("kbroker_replica_fetch_requests_total %v, want at least %d", got, busy1.FullRequests+busy1.IncrementalRequests)
	}
	lmfs, err := leader.metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if got := testutilGauge(lmfs, "kbroker_fetch_session_partitions"); got < n {
		t.Errorf("kbroker_fetch_session_partitions %v on the leader, want at least %d", got, n)
	}
	t.Logf("%d partitions: the opening full request(s) named %.0f each; idle, %d incremental requests named %d; busy (3 partitions × 20 acks=all rounds), %d named %d (%.2f per request)",
		n, float64(busy1.FullPartitions)/float64(busy1.FullRequests), idleReqs, idleNamed, busyReqs, busyNamed, float64(busyNamed)/float64(busyReqs))
}

func testutilGauge(mfs []*dto.MetricFamily, name string) float64 {
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				total += m.GetGauge().GetValue()
			}
		}
	}
	return total
}

// A leader with max.incremental.fetch.session.cache.slots=0 keeps no
// session: its follower's full requests are answered with session id 0,
// so it goes on sending full requests, and replication goes on.
func TestFollowerFetchWithoutSessionSlots(t *testing.T) {
	nodes := startPair(t, "max.incremental.fetch.session.cache.slots=0", "replica.fetch.wait.max.ms=100")
	leader, follower := nodes[0], nodes[1]
	cl, err := kgo.NewClient(kgo.SeedBrokers(leader.addr), kgo.DefaultProduceTopic("no-slots"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	createPartitionOn(ctx, t, cl, "no-slots", 1, 2)
	tp := replication.TopicPartition{Topic: "no-slots", Partition: 0}
	testutil.Eventually(t, 20*time.Second, func() bool {
		part, err := leader.replicas.LeaderPartition(tp)
		return err == nil && len(part.State().ISR) == 2
	}, "broker 1 to lead with ISR [1 2]")
	for i := range 5 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		part, err := follower.replicas.Partition(tp)
		return err == nil && part.HighWatermark() == 5
	}, "the follower to replicate the five acks=all records")
	st := follower.replicas.FollowerFetchStats()
	if st.FullRequests < 2 || st.IncrementalRequests != 0 {
		t.Fatalf("follower of a leader without session slots: %d full, %d incremental requests; want only full ones", st.FullRequests, st.IncrementalRequests)
	}
	if sessions, _, _ := leader.fetchSessions.Stats(); sessions != 0 {
		t.Fatalf("the leader keeps %d sessions with no slots", sessions)
	}
}
