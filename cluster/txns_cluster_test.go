package cluster

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/txncoord"
	"github.com/kbroker/kbroker/internal/testutil"
	"github.com/kbroker/kbroker/replication"
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

	newProducer := func() *kgo.Client {
		p, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.TransactionalID("t-three"), kgo.DefaultProduceTopic("txn3"),
			kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.RecordDeliveryTimeout(30*time.Second),
			kgo.TransactionTimeout(20*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := newProducer()
	defer func() { p.Close() }()
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
	waitFullStateISR(t, nodes[coord-1], "t-three")
	t.Logf("stopping the coordinator, broker %d", coord)
	nodes[coord-1].stop(t)
	for round := 2; round < 4; round++ {
		testutil.Eventually(t, 40*time.Second, func() bool {
			if err := run(round, round == 2); err != nil {
				t.Logf("round %d: %v (retrying)", round, err)
				if strings.Contains(err.Error(), "fatal, unrecoverable") {
					// franz-go gives up on a transactional producer
					// whose cached coordinator left the broker list
					// ("unknown broker", as it would against Kafka,
					// whose Metadata also omits a stopped broker); an
					// application then makes a new client, which
					// fences the old epoch and aborts its open
					// transaction.
					p.Close()
					p = newProducer()
				}
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

// waitFullStateISR waits until coord leads the __transaction_state
// partition of id with all three replicas in its ISR. Tests stop the
// coordinator only then: under load a follower may have dropped out, and
// a partition whose only ISR member stops stays offline (no unclean
// election), which is not what they are about.
func waitFullStateISR(t *testing.T, coord *testNode, id string) {
	t.Helper()
	tp := replication.TopicPartition{Topic: txncoord.StateTopic, Partition: coord.txns.PartitionFor(id)}
	testutil.Eventually(t, 60*time.Second, func() bool {
		part, err := coord.replicas.Partition(tp)
		return err == nil && part.IsLeader() && len(part.State().ISR) == 3
	}, "the coordinator's state partition to have its full ISR")
}

// The coordinator fails over in the middle of a producer id rotation: the
// producer's epoch is exhausted, its InitProducerId rotates it to a new
// producer id, and the answer is lost with the coordinator. The new
// coordinator reloads the previous producer id from __transaction_state
// (value version 1), so the producer's retry with its old id and epoch
// gets the new id rather than PRODUCER_FENCED.
func TestTransactionsRotationSurvivesFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("three in-process brokers")
	}
	nodes := startTrio(t)
	const id = "t-rotate"
	cl, err := kgo.NewClient(kgo.SeedBrokers(nodes[0].addr, nodes[1].addr, nodes[2].addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// A topic of replication factor 3 first: every broker is up, so
	// __transaction_state gets three replicas too.
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "rotate"); err != nil {
		t.Fatal(err)
	}

	// init sends InitProducerId to whichever broker coordinates id now
	// (kgo finds it, and finds it again after NOT_COORDINATOR).
	init := func(cl *kgo.Client, pid int64, epoch int16) (*kmsg.InitProducerIDResponse, error) {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.Version = 4
		req.TransactionalID = kmsg.StringPtr(id)
		req.TransactionTimeoutMillis = 60000
		req.ProducerID, req.ProducerEpoch = pid, epoch
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return nil, err
		}
		return resp, kerr.ErrorForCode(resp.ErrorCode)
	}
	var pid int64
	testutil.Eventually(t, 30*time.Second, func() bool {
		resp, err := init(cl, -1, -1)
		if err != nil {
			t.Logf("first InitProducerId: %v", err)
			return false
		}
		pid = resp.ProducerID
		return true
	}, "the first InitProducerId")

	// Give the producer the last usable epoch, as a coordinator's abort
	// of a timed-out transaction would have.
	coord := coordinatorOf(t, adm, ctx, id)
	c := nodes[coord-1].txns
	exhausted := int16(math.MaxInt16 - 1)
	if err := c.SetProducerEpochForTesting(ctx, id, exhausted); err != nil {
		t.Fatalf("seeding the epoch: %v", err)
	}

	rotated, err := init(cl, pid, exhausted)
	if err != nil {
		t.Fatalf("rotating InitProducerId: %v", err)
	}
	if rotated.ProducerID == pid || rotated.ProducerEpoch != 0 {
		t.Fatalf("rotation gave producer %d epoch %d, want a new id at epoch 0", rotated.ProducerID, rotated.ProducerEpoch)
	}

	waitFullStateISR(t, nodes[coord-1], id)
	t.Logf("stopping the coordinator, broker %d", coord)
	nodes[coord-1].stop(t)
	var live []string
	for i, n := range nodes {
		if int32(i+1) != coord {
			live = append(live, n.addr)
		}
	}
	testutil.Eventually(t, 60*time.Second, func() bool {
		// A fresh client each try: one that remembers the stopped
		// coordinator keeps dialing it.
		retryCl, err := kgo.NewClient(kgo.SeedBrokers(live...))
		if err != nil {
			t.Fatal(err)
		}
		defer retryCl.Close()
		resp, err := init(retryCl, pid, exhausted)
		switch {
		case errors.Is(err, kerr.ProducerFenced):
			t.Fatalf("the retry after the failover was fenced: the previous producer id was lost")
		case err != nil:
			t.Logf("retry: %v (retrying)", err)
			return false
		case resp.ProducerID != rotated.ProducerID || resp.ProducerEpoch != 0:
			t.Fatalf("retry after the failover gave producer %d epoch %d, want %d epoch 0", resp.ProducerID, resp.ProducerEpoch, rotated.ProducerID)
		}
		return true
	}, "the producer's retry reaches the new coordinator")
}
