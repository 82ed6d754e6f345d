package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/testutil"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A franz-go client whose connections the broker closed for idleness
// reconnects and goes on producing and consuming (its fetches wait 2 s,
// longer than the idle timeout).
func TestFranzClientAcrossIdleCloses(t *testing.T) {
	node := startNode(t, "", "connections.max.idle.ms=300")
	createTopic(t, node.addr, "idle", 1, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(node.addr), kgo.DefaultProduceTopic("idle"),
		kgo.ConsumeTopics("idle"), kgo.FetchMaxWait(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	produce := func(v string) {
		t.Helper()
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
	}
	produce("before")
	testutil.Eventually(t, 10*time.Second, func() bool {
		return nodeMetric(t, node.Node, "kbroker_connections_closed_idle_total") > 0
	}, "an idle connection to be closed")
	produce("after")

	got := map[string]bool{}
	for len(got) < 2 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %v before the deadline", got)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) { got[string(r.Value)] = true })
	}
}
