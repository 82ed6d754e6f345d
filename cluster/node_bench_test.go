package cluster

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

const benchValueSize = 100

// BenchmarkProduce measures a single node's acks=all idempotent produce
// rate with franz-go's defaults and 100-byte values, b.N records.
func BenchmarkProduce(b *testing.B) {
	node := startNode(b, "")
	createTopic(b, node.addr, "bench", 3, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(node.addr), kgo.DefaultProduceTopic("bench"))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	value := make([]byte, benchValueSize)
	ctx := context.Background()
	b.SetBytes(benchValueSize)
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	var errOnce sync.Once
	var firstErr error
	for range b.N {
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				errOnce.Do(func() { firstErr = err })
			}
			wg.Done()
		})
	}
	wg.Wait()
	b.StopTimer()
	if firstErr != nil {
		b.Fatal(firstErr)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkConsume measures reading b.N 100-byte records back from the
// start of a 3-partition topic.
func BenchmarkConsume(b *testing.B) {
	node := startNode(b, "")
	createTopic(b, node.addr, "bench", 3, nil)
	recs := make([]*kgo.Record, b.N)
	value := make([]byte, benchValueSize)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: "bench", Value: value}
	}
	pcl, err := kgo.NewClient(kgo.SeedBrokers(node.addr))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := pcl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		b.Fatal(err)
	}
	pcl.Close()

	cl, err := kgo.NewClient(kgo.SeedBrokers(node.addr), kgo.ConsumeTopics("bench"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	b.SetBytes(benchValueSize)
	b.ReportAllocs()
	b.ResetTimer()
	for got := 0; got < b.N; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			b.Fatalf("consumed %d of %d", got, b.N)
		}
		got += fs.NumRecords()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
