package bench

// kbroker bench --mode newtopic: how soon a new topic takes writes. For
// each of --topics topics (--partitions partitions, RF 3), the time from
// CreateTopics' answer to an acks=all record acknowledged on every one of
// its partitions: the metadata's way from the controller to every broker,
// each leader's first append and its followers' first fetch. Clients that
// create a topic and write at once wait this long.

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// newTopicPause separates the topics, so each is measured on a quiet
// cluster rather than behind the previous one's replication set-up.
const newTopicPause = 300 * time.Millisecond

func runNewTopic(ctx context.Context, c benchConfig, cl *benchCluster, stdout io.Writer) error {
	prod, closeLog, err := newBenchProducer(cl.seeds(), "", c.clientLog)
	if err != nil {
		return err
	}
	defer closeLog()
	defer prod.Close()
	adm := kadm.NewClient(prod)
	fmt.Fprintf(stdout, "%d new topics, %d partitions each, RF 3, min.insync.replicas 2: time from CreateTopics' answer to an acks=all record acknowledged on every partition\n",
		c.topics, c.partitions)
	value := payload(c.recordSize)
	var took []int64
	for i := range c.topics {
		name := fmt.Sprintf("bench-newtopic-%d-%d", time.Now().UnixNano(), i)
		resp, err := adm.CreateTopic(ctx, int32(c.partitions), 3, nil, name)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			return fmt.Errorf("create %s: %w", name, err)
		}
		d, err := firstWrites(ctx, prod, name, c.partitions, value)
		if err != nil {
			return fmt.Errorf("first records to %s: %w", name, err)
		}
		took = append(took, int64(d))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(newTopicPause):
		}
	}
	fmt.Fprintln(stdout, newTopicSummary(took))
	return nil
}

// firstWrites produces one record to each partition of topic at once and
// returns how long until the last was acknowledged.
func firstWrites(ctx context.Context, prod *kgo.Client, topic string, partitions int, value []byte) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	start := time.Now()
	errs := make([]error, partitions)
	var wg sync.WaitGroup
	for p := range partitions {
		wg.Go(func() {
			errs[p] = prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: int32(p), Value: value}).FirstErr()
		})
	}
	wg.Wait()
	for p, err := range errs {
		if err != nil {
			return 0, fmt.Errorf("partition %d: %w", p, err)
		}
	}
	return time.Since(start), nil
}

// newTopicSummary is the per-topic times in order, then their minimum,
// median, 90th percentile and maximum.
func newTopicSummary(took []int64) string {
	var b strings.Builder
	b.WriteString("per topic (ms):")
	for _, d := range took {
		fmt.Fprintf(&b, " %.1f", ms(time.Duration(d)))
	}
	ps := percentiles(took, []float64{0, 0.5, 0.9, 1})
	fmt.Fprintf(&b, "\nmin %.1f ms, median %.1f ms, p90 %.1f ms, max %.1f ms",
		ms(time.Duration(ps[0])), ms(time.Duration(ps[1])), ms(time.Duration(ps[2])), ms(time.Duration(ps[3])))
	return b.String()
}
