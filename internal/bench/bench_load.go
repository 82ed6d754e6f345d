package bench

// Load generation for "kbroker bench": one produce run (full speed or
// paced) and one consume run against a set of seed brokers.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

type loadResult struct {
	records  int64
	elapsed  time.Duration
	failed   int64
	firstErr error
	p50, p99 time.Duration
	// CPU per record produced, in µs: the kbroker nodes', and this
	// process's (the client, plus kfake when it is the target).
	nodeCPU, selfCPU float64
}

func (r loadResult) rate() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.records) / r.elapsed.Seconds()
}

// createBenchTopic creates topic with partitions × rf and
// min.insync.replicas=2 (an existing one is fine), then waits until every
// partition has a leader.
func createBenchTopic(ctx context.Context, seeds []string, topic string, partitions int32, rf int16, configs map[string]*string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(cctx, partitions, rf, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("creating %s: %w", topic, err)
	}
	for {
		md, err := adm.Metadata(cctx, topic)
		if err == nil {
			if t, ok := md.Topics[topic]; ok && t.Err == nil && len(t.Partitions) == int(partitions) {
				led := 0
				for _, p := range t.Partitions {
					if p.Leader >= 0 && p.Err == nil {
						led++
					}
				}
				if led == int(partitions) {
					return nil
				}
			}
		}
		select {
		case <-cctx.Done():
			return fmt.Errorf("waiting for leaders of %s: %w", topic, cctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// warmTopic produces one record to each partition of topic with acks=all
// and waits for them: the first acks=all produce to a new partition waits
// for its followers to start fetching it (up to replica.fetch.wait.max.ms
// while their fetch is parked on other partitions), which belongs to
// creating the topic, not to the steady state the latency rows measure.
func warmTopic(ctx context.Context, seeds []string, topic string, partitions int32) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer cl.Close()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	recs := make([]*kgo.Record, partitions)
	for p := range partitions {
		recs[p] = &kgo.Record{Partition: p, Value: []byte("warm")}
	}
	if err := cl.ProduceSync(cctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("warming %s: %w", topic, err)
	}
	return nil
}

type produceSpec struct {
	seeds      []string
	topic      string
	recordSize int
	duration   time.Duration
	rate       float64 // records/s; 0 is as fast as the client goes
	linger     time.Duration
	logger     kgo.Logger // nil: none
}

// benchProduce produces for spec.duration with an idempotent acks=all
// franz-go producer without compression (otherwise its defaults) and
// measures records/s and the produce→ack latency percentiles.
func benchProduce(ctx context.Context, spec produceSpec) (loadResult, error) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(spec.seeds...),
		kgo.DefaultProduceTopic(spec.topic),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerLinger(spec.linger),
	}
	if spec.logger != nil {
		opts = append(opts, kgo.WithLogger(spec.logger))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return loadResult{}, err
	}
	defer cl.Close()

	value := payload(spec.recordSize)
	var mu sync.Mutex
	var res loadResult
	lat := reservoir{max: 2_000_000}
	start := time.Now()
	deadline := start.Add(spec.duration)
	var sent int64
	for ctx.Err() == nil {
		now := time.Now()
		if !now.Before(deadline) {
			break
		}
		if spec.rate > 0 {
			if ahead := time.Duration(float64(sent)/spec.rate*float64(time.Second)) - now.Sub(start); ahead > 200*time.Microsecond {
				time.Sleep(ahead)
				continue
			}
		}
		t0 := now
		cl.Produce(context.Background(), &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			d := time.Since(t0)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				res.failed++
				if res.firstErr == nil {
					res.firstErr = err
				}
				return
			}
			res.records++
			lat.add(int64(d))
		})
		sent++
	}
	if err := cl.Flush(ctx); err != nil {
		return loadResult{}, err
	}
	res.elapsed = time.Since(start)
	mu.Lock()
	defer mu.Unlock()
	ps := percentiles(lat.values, []float64{0.50, 0.99})
	res.p50, res.p99 = time.Duration(ps[0]), time.Duration(ps[1])
	return res, nil
}

// benchConsume reads want records of topic from the start without a
// group and measures records/s from the first poll to the last record.
func benchConsume(ctx context.Context, seeds []string, topic string, want int64) (loadResult, error) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(seeds...),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	)
	if err != nil {
		return loadResult{}, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var res loadResult
	start := time.Now()
	for res.records < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return res, fmt.Errorf("consumed %d of %d records: %w", res.records, want, ctx.Err())
		}
		fs.EachError(func(_ string, _ int32, err error) {
			if res.firstErr == nil {
				res.firstErr = err
			}
		})
		res.records += int64(fs.NumRecords())
	}
	res.elapsed = time.Since(start)
	return res, nil
}
