package cluster

import (
	"context"
	"fmt"
	"github.com/kbroker/kbroker/internal/testutil"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// startTrio starts three broker+controller nodes forming one quorum, with
// __transaction_state and __consumer_offsets replicated on all three.
func startTrio(t *testing.T) [3]*testNode {
	t.Helper()
	return [3]*testNode(startQuorum(t, 3, nil, txnNodeSets...))
}

// Three brokers: a transaction spans partitions led by every broker, so
// its markers go to remote leaders (WriteTxnMarkers) and its produces are
// verified with a remote coordinator (AddPartitionsToTxn v4). Then the
// transaction coordinator's broker stops mid-pipeline; the producer goes
// on with the new coordinator, which loaded __transaction_state, and a
// read_committed consumer sees every committed record once and no
// aborted one.
func TestTransactionsThreeBrokersCoordinatorStops(t *testing.T) {
	if testing.Short() {
		t.Skip("three in-process brokers")
	}
	nodes := startTrio(t)
	seeds := []string{nodes[0].addr, nodes[1].addr, nodes[2].addr}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, "txn3"); err != nil {
		t.Fatal(err)
	}

	p, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.TransactionalID("t-three"), kgo.DefaultProduceTopic("txn3"),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.RecordDeliveryTimeout(30*time.Second),
		kgo.TransactionTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var want []string
	run := func(round int, commit bool) error {
		if err := p.BeginTransaction(); err != nil {
			return err
		}
		var vals []string
		for i := range 6 {
			v := fmt.Sprintf("r%d-%d", round, i)
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
	for round := range 2 {
		if err := run(round, round == 0); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}

	// Stop the transaction coordinator's broker.
	coord := coordinatorOf(t, adm, ctx, "t-three")
	t.Logf("stopping the coordinator, broker %d", coord)
	nodes[coord-1].stop(t)
	for round := 2; round < 4; round++ {
		testutil.Eventually(t, 40*time.Second, func() bool {
			if err := run(round, round == 2); err != nil {
				t.Logf("round %d: %v (retrying)", round, err)
				return false
			}
			return true
		}, "round %d after the coordinator stopped", round)
	}
	var addrs []string
	for i, n := range nodes {
		if int32(i+1) != coord {
			addrs = append(addrs, n.addr)
		}
	}
	got := consumeValues(t, addrs[0], "txn3", true, len(want))
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("read_committed consumer got %q, want %q", got, want)
	}
}

func coordinatorOf(t *testing.T, adm *kadm.Client, ctx context.Context, id string) int32 {
	t.Helper()
	var coord int32 = -1
	testutil.Eventually(t, 10*time.Second, func() bool {
		d, err := adm.DescribeTransactions(ctx, id)
		if err != nil {
			return false
		}
		desc, ok := d[id]
		if !ok || desc.Err != nil {
			return false
		}
		coord = desc.Coordinator
		return true
	}, "the transaction coordinator is known")
	return coord
}
