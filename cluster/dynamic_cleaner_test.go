package cluster

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kbroker/kbroker/internal/testutil"
	"github.com/kbroker/kbroker/storage"
)

// The log cleaner's keys altered cluster-wide with kadm are described as
// dynamic defaults, reach the running cleaner of every broker, and take
// effect: a cleaner started with an hour's backoff compacts a topic soon
// after the backoff is lowered.
func TestDynamicCleanerConfigs(t *testing.T) {
	nodes := startPair(t, "log.cleaner.backoff.ms=3600000")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(nodes[0].addr, nodes[1].addr), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	const topic, records = "compacted", 300
	cfgs := map[string]*string{"cleanup.policy": new("compact"), "segment.bytes": new("1024"), "min.cleanable.dirty.ratio": new("0.01")}
	if r, err := adm.CreateTopic(ctx, 1, 1, cfgs, topic); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	for i := 0; i < records; i += 10 {
		var rs []*kgo.Record
		for j := i; j < i+10; j++ {
			rs = append(rs, &kgo.Record{Topic: topic, Key: []byte("key-" + strconv.Itoa(j%3)), Value: []byte(fmt.Sprintf("value-%04d", j))})
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}

	set := map[string]string{
		"log.cleaner.backoff.ms":              "100",
		"log.cleaner.io.max.bytes.per.second": "1048576",
		"log.cleaner.threads":                 "2",
		"log.cleaner.dedupe.buffer.size":      "2097152",
	}
	var alters []kadm.AlterConfig
	for k, v := range set {
		alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: new(v)})
	}
	if res, err := adm.AlterBrokerConfigs(ctx, alters); err != nil || res[0].Err != nil {
		t.Fatalf("alter: %v %v", err, res)
	}

	for _, n := range nodes {
		// A broker describes from its own metadata image, which may lag
		// the controller's by a moment.
		testutil.Eventually(t, 30*time.Second, func() error {
			rcs, err := adm.DescribeBrokerConfigs(ctx, n.cfg.NodeID)
			if err != nil {
				return err
			}
			rc, err := rcs.On(strconv.Itoa(int(n.cfg.NodeID)), nil)
			if err != nil || rc.Err != nil {
				return fmt.Errorf("describe: %w %w", err, rc.Err)
			}
			seen := 0
			for _, c := range rc.Configs {
				if v, ok := set[c.Key]; ok {
					seen++
					if c.MaybeValue() != v || c.Source.String() != "DYNAMIC_DEFAULT_BROKER_CONFIG" {
						return fmt.Errorf("%s = %q from %v", c.Key, c.MaybeValue(), c.Source)
					}
				}
			}
			if seen != len(set) {
				return fmt.Errorf("described %d of the %d keys", seen, len(set))
			}
			return nil
		}, "broker %d describes the dynamic cleaner keys", n.cfg.NodeID)
		want := storage.CleanerState{Enabled: true, Threads: 2, Backoff: 100 * time.Millisecond, DedupeBufferSize: 2097152, IOMaxBytesPerSecond: 1048576}
		testutil.Eventually(t, 30*time.Second, func() error {
			if got := n.logs.CleanerState(); got != want {
				return fmt.Errorf("broker %d cleaner %+v", n.cfg.NodeID, got)
			}
			return nil
		}, "cleaner settings applied")
	}

	// Compacted by the cleaner the lowered backoff wakes: fewer records
	// than produced are left to read.
	testutil.Eventually(t, time.Minute, func() error {
		n, err := countRecords(ctx, nodes[0].addr, topic, records)
		if err != nil {
			return err
		}
		if n >= records {
			return fmt.Errorf("%d records, not compacted", n)
		}
		return nil
	}, "topic compacted")

	// Deleting the dynamic value returns to the static one.
	if res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "log.cleaner.threads"}}); err != nil || res[0].Err != nil {
		t.Fatalf("delete: %v %v", err, res)
	}
	for _, n := range nodes {
		testutil.Eventually(t, 30*time.Second, func() error {
			if got := n.logs.CleanerState().Threads; got != 1 {
				return fmt.Errorf("broker %d: %d threads", n.cfg.NodeID, got)
			}
			return nil
		}, "static log.cleaner.threads back")
	}
}

// countRecords reads partition 0 of topic from its start to offset end
// and returns how many records it holds.
func countRecords(ctx context.Context, addr, topic string, end int64) (int, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	n := 0
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		done := false
		fs.EachRecord(func(r *kgo.Record) {
			n++
			done = done || r.Offset >= end-1
		})
		if done {
			return n, nil
		}
	}
}
