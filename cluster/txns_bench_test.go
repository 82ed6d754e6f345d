package cluster

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
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
