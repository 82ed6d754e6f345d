package itest

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Three brokers, a transactional producer writing rounds to partitions
// led by every broker, committing and aborting in turn; the broker that
// coordinates its transactional id is killed with SIGKILL mid-pipeline.
// The producer goes on with the new coordinator, which reloaded
// __transaction_state (replicated on all three) and finished or aborted
// what was in flight; a read_committed consumer sees every committed
// round exactly once and nothing of the aborted ones.
func TestTransactionsCoordinatorKill9(t *testing.T) {
	c := startCluster(t, 3, "transaction.state.log.num.partitions=3", "offsets.topic.num.partitions=3")
	topic := topicName(t)
	createReplicated(t, c, topic, 3, 3, nil)

	p := clusterClient(t, c, kgo.TransactionalID("itest-kill9"), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.RecordDeliveryTimeout(30*time.Second),
		kgo.TransactionTimeout(10*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	var want []string
	run := func(round int) error {
		commit := round%2 == 0
		if err := p.BeginTransaction(); err != nil {
			return err
		}
		var vals []string
		for i := range 9 {
			v := fmt.Sprintf("r%02d-%d", round, i)
			vals = append(vals, v)
			if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
				_ = p.EndTransaction(ctx, kgo.TryAbort)
				return fmt.Errorf("producing %s: %w", v, err)
			}
		}
		end := kgo.TryAbort
		if commit {
			end = kgo.TryCommit
		}
		if err := p.EndTransaction(ctx, end); err != nil {
			return err
		}
		if commit {
			want = append(want, vals...)
		}
		return nil
	}
	runUntilDone := func(round int) {
		deadline := time.Now().Add(60 * time.Second)
		for {
			err := run(round)
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %v", round, err)
			}
			t.Logf("round %d: %v (retrying)", round, err)
			time.Sleep(200 * time.Millisecond)
		}
	}
	for round := range 3 {
		runUntilDone(round)
	}

	adm := kadm.NewClient(clusterClient(t, c))
	d, err := adm.DescribeTransactions(ctx, "itest-kill9")
	if err != nil {
		t.Fatal(err)
	}
	coord := d["itest-kill9"].Coordinator
	if coord < 1 || int(coord) > len(c.brokers) {
		t.Fatalf("coordinator %d", coord)
	}
	// Kill it with a transaction open.
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte("in-flight")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	t.Logf("killing the coordinator, broker %d", coord)
	c.brokers[coord-1].kill9()
	// The open transaction cannot commit everywhere: abort it (or learn it
	// was aborted for us), then go on.
	_ = p.EndTransaction(ctx, kgo.TryAbort)
	for round := 3; round < 6; round++ {
		runUntilDone(round)
	}

	var seeds []string
	for _, b := range c.alive() {
		seeds = append(seeds, b.addr)
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var got []string
	for len(got) < len(want) && ctx.Err() == nil {
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		fs := cons.PollFetches(pctx)
		pcancel()
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("read_committed consumer got %d records, want the %d committed: got %q", len(got), len(want), got)
	}
}
