package cluster

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnBenchRecords is how many records one benchmark transaction holds.
const txnBenchRecords = 100

// BenchmarkTxnProduce compares, on one node and one 6-partition topic,
// idempotent acks=all produce with transactional produce of
// txnBenchRecords 100-byte records per transaction, both spreading
// records round-robin over the partitions. The transactional run also
// reports the commit latency (EndTransaction: EndTxn to the coordinator,
// which answers once PREPARE_COMMIT is in __transaction_state; the
// markers follow asynchronously) at p50 and p99, and the same of a
// transaction's produce phase.
//
//	go test -run '^$' -bench BenchmarkTxnProduce -benchtime 20000x ./cluster
func BenchmarkTxnProduce(b *testing.B) {
	node := startNode(b, "", txnNodeSets...)
	createTopic(b, node.addr, "bench-txn", 6, nil)
	base := []kgo.Opt{kgo.SeedBrokers(node.addr), kgo.DefaultProduceTopic("bench-txn"),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner())}
	value := make([]byte, benchValueSize)

	b.Run("idempotent", func(b *testing.B) {
		cl, err := kgo.NewClient(base...)
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		b.SetBytes(benchValueSize)
		b.ResetTimer()
		if err := produceAcked(context.Background(), cl, value, b.N); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
	})

	// franz-go retries an AddPartitionsToTxn refused with
	// CONCURRENT_TRANSACTIONS (the previous transaction's markers not yet
	// all written) after 20 ms by default; the short-backoff run shows
	// the broker's own pace.
	b.Run("transactional", func(b *testing.B) {
		benchTransactions(b, value, append(base, kgo.TransactionalID("bench-txn"))...)
	})
	b.Run("transactional-backoff-1ms", func(b *testing.B) {
		benchTransactions(b, value, append(base, kgo.TransactionalID("bench-txn-1ms"),
			kgo.ConcurrentTransactionsBackoff(time.Millisecond))...)
	})
}

// benchTransactions commits transactions of txnBenchRecords records until
// b.N records are committed, and reports records/s and the latencies.
func benchTransactions(b *testing.B, value []byte, opts ...kgo.Opt) {
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var produces, commits []time.Duration
	b.SetBytes(benchValueSize)
	b.ResetTimer()
	for done := 0; done < b.N; done += txnBenchRecords {
		began := time.Now()
		if err := cl.BeginTransaction(); err != nil {
			b.Fatal(err)
		}
		if err := produceAcked(ctx, cl, value, min(txnBenchRecords, b.N-done)); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		produces = append(produces, start.Sub(began))
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			b.Fatal(err)
		}
		commits = append(commits, time.Since(start))
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
	slices.Sort(produces)
	slices.Sort(commits)
	b.ReportMetric(percentileMillis(produces, 0.50), "produce-p50-ms")
	b.ReportMetric(percentileMillis(produces, 0.99), "produce-p99-ms")
	b.ReportMetric(percentileMillis(commits, 0.50), "commit-p50-ms")
	b.ReportMetric(percentileMillis(commits, 0.99), "commit-p99-ms")
}

// produceAcked produces n copies of value and waits for every ack. It
// flushes, as a transactional producer does before committing, so the
// last batches do not wait out franz-go's 10 ms default linger.
func produceAcked(ctx context.Context, cl *kgo.Client, value []byte, n int) error {
	var wg sync.WaitGroup
	var errOnce sync.Once
	var firstErr error
	for range n {
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				errOnce.Do(func() { firstErr = err })
			}
			wg.Done()
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	wg.Wait()
	return firstErr
}

// percentileMillis is the q-quantile of sorted durations in milliseconds
// (nearest rank), 0 for none.
func percentileMillis(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := min(len(sorted)-1, int(q*float64(len(sorted))))
	return float64(sorted[i]) / float64(time.Millisecond)
}

// BenchmarkTxnEndToNextAdd measures how long a producer that commits and
// at once starts its next transaction is refused with
// CONCURRENT_TRANSACTIONS: from the EndTxn answer (PREPARE_COMMIT stored)
// to the first AddPartitionsToTxn accepted, which needs the markers on
// all 6 partitions and COMPLETE_COMMIT stored. AddPartitionsToTxn is
// retried at once, so the figures are the broker's pace, not a client
// backoff (franz-go's default is 20 ms, Kafka's Java client's 20 ms too).
//
//	go test -run '^$' -bench BenchmarkTxnEndToNextAdd -benchtime 500x ./cluster
func BenchmarkTxnEndToNextAdd(b *testing.B) {
	node := startNode(b, "", txnNodeSets...)
	createTopic(b, node.addr, "bench-next", 6, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(node.addr))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	const id = "bench-next"
	var pid int64
	var epoch int16
	deadline := time.Now().Add(30 * time.Second)
	for {
		init := kmsg.NewPtrInitProducerIDRequest()
		init.TransactionalID = kmsg.StringPtr(id)
		init.TransactionTimeoutMillis = 60000
		resp, err := init.RequestWith(ctx, cl)
		if err == nil && resp.ErrorCode == 0 {
			pid, epoch = resp.ProducerID, resp.ProducerEpoch
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("InitProducerId: %v %v", err, resp)
		}
	}
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.Version = 3
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = id, pid, epoch
	add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "bench-next", Partitions: []int32{0, 1, 2, 3, 4, 5}}}
	// addUntilAccepted retries AddPartitionsToTxn at once while it is
	// refused with CONCURRENT_TRANSACTIONS, and returns how many times.
	addUntilAccepted := func() int {
		for refused := 0; ; refused++ {
			resp, err := add.RequestWith(ctx, cl)
			if err != nil {
				b.Fatal(err)
			}
			code := resp.Topics[0].Partitions[0].ErrorCode
			switch {
			case code == kerr.ConcurrentTransactions.Code:
			case code != 0:
				b.Fatalf("AddPartitionsToTxn: %v", kerr.ErrorForCode(code))
			default:
				return refused
			}
		}
	}
	var (
		waits    []time.Duration
		endedAt  time.Time // when the previous EndTxn was answered
		refusals int
	)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		n := addUntilAccepted()
		if i > 0 {
			waits = append(waits, time.Since(endedAt))
			refusals += n
		}
		end := kmsg.NewPtrEndTxnRequest()
		end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = id, pid, epoch, true
		resp, err := end.RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 {
			b.Fatalf("EndTxn: %v %v", err, resp)
		}
		endedAt = time.Now()
	}
	b.StopTimer()
	slices.Sort(waits)
	b.ReportMetric(percentileMillis(waits, 0.50), "end-to-add-p50-ms")
	b.ReportMetric(percentileMillis(waits, 0.90), "end-to-add-p90-ms")
	b.ReportMetric(percentileMillis(waits, 0.99), "end-to-add-p99-ms")
	b.ReportMetric(float64(refusals)/float64(max(len(waits), 1)), "refusals/txn")
}
