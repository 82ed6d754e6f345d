package cluster

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

type tpo struct {
	partition int32
	offset    int64
}

// produceAll produces n records with franz-go's defaults (idempotent,
// acks=all) and returns what each acknowledgement said.
func produceAll(t testing.TB, addr, topic string, n int, opts ...kgo.Opt) map[tpo]string {
	t.Helper()
	opts = append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic)}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var mu sync.Mutex
	acked := make(map[tpo]string, n)
	var firstErr error
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		r := &kgo.Record{Key: []byte(fmt.Sprintf("k%d", i%97)), Value: []byte(fmt.Sprintf("value-%07d", i))}
		cl.Produce(ctx, r, func(r *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			k := tpo{r.Partition, r.Offset}
			if prev, dup := acked[k]; dup {
				t.Errorf("offset %v acknowledged twice: %q and %q", k, prev, r.Value)
			}
			acked[k] = string(r.Value)
		})
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("produce: %v", firstErr)
	}
	return acked
}

// consumeAll reads every partition of topic from the start until want
// records have arrived.
func consumeAll(t testing.TB, addr, topic string, want int) map[tpo]string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	got := make(map[tpo]string, want)
	for len(got) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records before timeout", len(got), want)
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Fatalf("fetch %s/%d: %v", topic, p, err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			k := tpo{r.Partition, r.Offset}
			if prev, dup := got[k]; dup && prev != string(r.Value) {
				t.Errorf("offset %v read as %q and %q", k, prev, r.Value)
			}
			got[k] = string(r.Value)
		})
	}
	return got
}

func createTopic(t testing.TB, addr, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := adm.CreateTopic(ctx, partitions, 1, configs, topic)
	if err != nil {
		t.Fatal(err)
	}
	if res.Err != nil {
		t.Fatalf("create topic %s: %v", topic, res.Err)
	}
}

func checkAcked(t testing.TB, acked, got map[tpo]string) {
	t.Helper()
	for k, v := range acked {
		if got[k] != v {
			t.Fatalf("partition %d offset %d: acknowledged %q, read %q", k.partition, k.offset, v, got[k])
		}
	}
}

func TestFranzRoundTrip(t *testing.T) {
	n := 100_000
	if testing.Short() {
		n = 5_000
	}
	node := startNode(t, "")
	createTopic(t, node.addr, "roundtrip", 3, nil)
	acked := produceAll(t, node.addr, "roundtrip", n)
	if len(acked) != n {
		t.Fatalf("%d acknowledgements for %d records", len(acked), n)
	}
	got := consumeAll(t, node.addr, "roundtrip", n)
	checkAcked(t, acked, got)
	if len(got) != n {
		t.Fatalf("read %d records, produced %d", len(got), n)
	}
}

func TestRestartKeepsAcknowledgedRecords(t *testing.T) {
	dir := t.TempDir()
	node := startNode(t, dir)
	createTopic(t, node.addr, "durable", 3, nil)
	acked := produceAll(t, node.addr, "durable", 3000)
	node.stop(t)

	node = startNode(t, dir)
	more := produceAll(t, node.addr, "durable", 3000)
	for k, v := range more {
		if _, dup := acked[k]; dup {
			t.Fatalf("offset %v reused after restart", k)
		}
		acked[k] = v
	}
	got := consumeAll(t, node.addr, "durable", len(acked))
	checkAcked(t, acked, got)
}

func TestAutoCreateTopicOnProduce(t *testing.T) {
	node := startNode(t, "", "num.partitions=2")
	// franz-go asks for auto-creation only when told to.
	acked := produceAll(t, node.addr, "auto-created", 100, kgo.AllowAutoTopicCreation())
	got := consumeAll(t, node.addr, "auto-created", 100)
	checkAcked(t, acked, got)
}
