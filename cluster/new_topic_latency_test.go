package cluster

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kbroker/kbroker/replication"
)

// Issue 14: the first acks=all produce to each partition of a new topic
// (RF 3, min.insync.replicas 2, three brokers) waited for the followers'
// fetches parked at the leader on the partitions they already followed,
// up to replica.fetch.wait.max.ms (a 503 ms Produce in a franz-go log),
// before any fetch named the new partition.
//
// With replica.fetch.wait.max.ms at 30 s, each follower's session fetches
// wait at their leaders for the whole test once the first topic is warm:
// nothing is produced to it again. The new topic's first produces are
// then acknowledged with none of those fetches answered (no follower
// sends another full or incremental request), through the fetchers' side
// fetches, so no wall clock is asserted: before the fix the produces
// waited out the 30 s and the session fetches were answered.
func TestNewTopicFirstProduceDoesNotWaitForParkedFetches(t *testing.T) {
	if testing.Short() {
		t.Skip("three in-process brokers")
	}
	nodes := startQuorum(t, 3, nil, "offsets.topic.replication.factor=1",
		"replica.fetch.wait.max.ms=30000", "replica.lag.time.max.ms=120000")
	seeds := []string{nodes[0].addr, nodes[1].addr, nodes[2].addr}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	produceAll := func(topic string) []time.Duration {
		t.Helper()
		var wg sync.WaitGroup
		took := make([]time.Duration, 3)
		errs := make([]error, 3)
		for p := range int32(3) {
			wg.Go(func() {
				start := time.Now()
				errs[p] = cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte("v")}).FirstErr()
				took[p] = time.Since(start)
			})
		}
		wg.Wait()
		for p, err := range errs {
			if err != nil {
				t.Fatalf("produce to %s-%d: %v", topic, p, err)
			}
		}
		return took
	}
	create := func(topic string) {
		t.Helper()
		resp, err := adm.CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			t.Fatalf("create %s: %v", topic, err)
		}
	}
	sessionRequests := func() (out [3]replication.FollowerFetchStats) {
		for i, n := range nodes {
			out[i] = n.replicas.FollowerFetchStats()
		}
		return out
	}

	create("warm")
	// The first topic's partitions are each its fetcher's first, so they
	// start in the session fetch; once acknowledged, every session fetch
	// waits at its leader with nothing to wake it.
	produceAll("warm")
	before := sessionRequests()

	create("fresh")
	took := produceAll("fresh")
	after := sessionRequests()
	t.Logf("first acks=all produce per partition of the new topic: %v", took)
	for i := range nodes {
		b, a := before[i], after[i]
		if a.FullRequests != b.FullRequests || a.IncrementalRequests != b.IncrementalRequests {
			t.Errorf("broker %d sent %d full and %d incremental requests meanwhile: its fetches parked at the leaders were answered, so the produces may have waited for them",
				i+1, a.FullRequests-b.FullRequests, a.IncrementalRequests-b.IncrementalRequests)
		}
		if a.SideRequests == b.SideRequests {
			t.Errorf("broker %d sent no side fetch for the new partitions", i+1)
		}
	}
	if t.Failed() {
		t.Logf("stats before %+v after %+v", before, after)
	}
}
