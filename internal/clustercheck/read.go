package clustercheck

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// EndOffsets lists the high watermark of every partition of topic.
// opts add to the client's options (TLS, SASL).
func EndOffsets(ctx context.Context, seeds []string, topic string, opts ...kgo.Opt) (map[int32]int64, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.DialTimeout(2 * time.Second),
		kgo.RetryTimeout(15 * time.Second)}, opts...)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	lo, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("ListEndOffsets %s: %w", topic, err)
	}
	ends := map[int32]int64{}
	var errs []error
	lo.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			errs = append(errs, fmt.Errorf("p%d: %w", o.Partition, o.Err))
		}
		ends[o.Partition] = o.Offset
	})
	if len(errs) > 0 {
		return nil, fmt.Errorf("ListEndOffsets %s: %w", topic, errors.Join(errs...))
	}
	return ends, nil
}

// ReadAll reads every partition of topic from offset 0 up to (not
// including) its end offset in ends and returns the records by partition
// in offset order. Records at or past the end offset (produced later)
// are dropped. It fails when ctx ends first. opts add to the client's
// options (TLS, SASL).
func ReadAll(ctx context.Context, seeds []string, topic string, ends map[int32]int64, opts ...kgo.Opt) (map[int32][]Record, error) {
	start := map[int32]kgo.Offset{}
	remaining := map[int32]bool{}
	for p, e := range ends {
		if e > 0 {
			start[p] = kgo.NewOffset().At(0)
			remaining[p] = true
		}
	}
	got := map[int32][]Record{}
	if len(remaining) == 0 {
		return got, nil
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.DialTimeout(2 * time.Second),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: start})}, opts...)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var fetchErrs []string
	for len(remaining) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		fs.EachError(func(_ string, p int32, err error) {
			if len(fetchErrs) < 5 {
				fetchErrs = append(fetchErrs, fmt.Sprintf("p%d: %v", p, err))
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			end := ends[r.Partition]
			if r.Offset >= end {
				return
			}
			got[r.Partition] = append(got[r.Partition], Record{r.Partition, r.Offset, string(r.Value)})
			if r.Offset == end-1 {
				delete(remaining, r.Partition)
			}
		})
	}
	if len(remaining) > 0 {
		return got, fmt.Errorf("read of %s: %d partitions short of their end offsets %v (fetch errors: %s): %w",
			topic, len(remaining), ends, strings.Join(fetchErrs, "; "), ctx.Err())
	}
	return got, nil
}
