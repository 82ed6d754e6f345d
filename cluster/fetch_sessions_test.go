package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Over the wire: franz-go's consumer uses sessions by default; records
// produced over time to many partitions are all read, once and in order,
// and the broker holds its session.
func TestFetchSessionsWithFranz(t *testing.T) {
	node := startNode(t, "")
	const partitions, perPartition = 8, 200
	createTopic(t, node.addr, "sessions", partitions, nil)
	producer, err := kgo.NewClient(kgo.SeedBrokers(node.addr), kgo.DefaultProduceTopic("sessions"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	consumer, err := kgo.NewClient(kgo.SeedBrokers(node.addr), kgo.ConsumeTopics("sessions"),
		kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// Produce in rounds while consuming, so most fetches are incremental
	// and see a few partitions change at a time.
	next := make([]int, partitions)
	seen := 0
	for round := range 10 {
		for i := range perPartition / 10 * partitions / 2 {
			p := int32((i + round) % (partitions / 2) * 2) // half the partitions per round
			if round%2 == 1 {
				p++
			}
			if err := producer.ProduceSync(ctx, &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "%d", i)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		want := (round + 1) * perPartition / 10 * partitions / 2
		for seen < want {
			fs := consumer.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("round %d: %d of %d records consumed: %v", round, seen, want, err)
			}
			fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
			fs.EachRecord(func(r *kgo.Record) {
				if int(r.Offset) != next[r.Partition] {
					t.Fatalf("partition %d: offset %d, want %d (a record read twice or skipped)", r.Partition, r.Offset, next[r.Partition])
				}
				next[r.Partition]++
				seen++
			})
		}
	}
	if sessions, cached, _ := node.fetchSessions.Stats(); sessions == 0 || cached != partitions {
		t.Fatalf("broker holds %d sessions with %d partitions, want the consumer's with %d", sessions, cached, partitions)
	}
}
