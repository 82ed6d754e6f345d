package cluster

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kbroker/kbroker/cluster/groupcoord"
	"github.com/kbroker/kbroker/replication"
)

func TestMinISRState(t *testing.T) {
	for _, tc := range []struct {
		isr, replicas int
		minISR        int32
		want          minISR
	}{
		{3, 3, 2, aboveMinISR},
		{2, 3, 2, atMinISR},
		{1, 3, 2, belowMinISR},
		{1, 1, 1, atMinISR}, // a single replica is always at its minimum, as in Kafka
		{1, 1, 2, atMinISR}, // the effective minimum is at most the replica count
		{2, 2, 3, atMinISR},
		{1, 2, 3, belowMinISR},
		{1, 3, 0, atMinISR}, // at least 1
		{3, 5, 4, belowMinISR},
	} {
		if got := minISRState(tc.isr, tc.replicas, tc.minISR); got != tc.want {
			t.Errorf("isr %d of %d replicas, min.insync.replicas %d: %v, want %v", tc.isr, tc.replicas, tc.minISR, got, tc.want)
		}
	}
}

func TestBoundLagSeries(t *testing.T) {
	pl := func(g, topic string, p int32, lag int64) groupcoord.PartitionLag {
		return groupcoord.PartitionLag{Group: g, Topic: topic, Partition: p, Lag: lag}
	}
	rep := groupcoord.LagReport{
		Partitions: []groupcoord.PartitionLag{pl("a", "t", 0, 5), pl("a", "t", 1, 50), pl("b", "t", 0, 0), pl("c", "u", 2, 7)},
		Groups:     []groupcoord.GroupLag{{Group: "a", Lag: 55}, {Group: "b", Lag: 0, Unknown: 3}, {Group: "c", Lag: 7, Unknown: 1}},
	}
	for _, tc := range []struct {
		name             string
		maxParts, maxGrp int
		wantParts        []lagSeries
		wantGroups       []groupcoord.GroupLag
	}{
		{"under the bounds", 10, 10,
			[]lagSeries{{"a", "t", "1", 50}, {"c", "u", "2", 7}, {"a", "t", "0", 5}, {"b", "t", "0", 0}},
			[]groupcoord.GroupLag{{Group: "a", Lag: 55}, {Group: "c", Lag: 7, Unknown: 1}, {Group: "b", Unknown: 3}}},
		{"the busiest kept, the rest summed", 2, 1,
			[]lagSeries{{"a", "t", "1", 50}, {"c", "u", "2", 7}, {otherLabel, otherLabel, otherLabel, 5}},
			[]groupcoord.GroupLag{{Group: "a", Lag: 55}, {Group: otherLabel, Lag: 7, Unknown: 4}}},
		{"exactly at the bounds", 4, 3,
			[]lagSeries{{"a", "t", "1", 50}, {"c", "u", "2", 7}, {"a", "t", "0", 5}, {"b", "t", "0", 0}},
			[]groupcoord.GroupLag{{Group: "a", Lag: 55}, {Group: "c", Lag: 7, Unknown: 1}, {Group: "b", Unknown: 3}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parts, groups := boundLagSeries(rep, tc.maxParts, tc.maxGrp)
			if !slices.Equal(parts, tc.wantParts) {
				t.Errorf("partitions %+v, want %+v", parts, tc.wantParts)
			}
			if !slices.Equal(groups, tc.wantGroups) {
				t.Errorf("groups %+v, want %+v", groups, tc.wantGroups)
			}
		})
	}
}

// A node exports the lag of a group it coordinates (commit at N with
// high watermark M: M−N), the at-min-ISR count of its single-replica
// partitions, and the sizes of its logs.
func TestStateMetricsLagISRLogSize(t *testing.T) {
	node := startNode(t, "")
	cl, err := kgo.NewClient(kgo.SeedBrokers(node.addr), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	if resp, err := adm.CreateTopic(ctx, 2, 1, nil, "lagged"); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	const produced = 10
	for i := range produced {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "lagged", Partition: 0, Value: fmt.Appendf(nil, "r%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	commit := kadm.Offsets{}
	commit.Add(kadm.Offset{Topic: "lagged", Partition: 0, At: 4, LeaderEpoch: -1})
	commit.Add(kadm.Offset{Topic: "lagged", Partition: 1, At: 0, LeaderEpoch: -1})
	if res, err := adm.CommitOffsets(ctx, "lagging", commit); err != nil || res.Error() != nil {
		t.Fatalf("commit: %v %v", err, res.Error())
	}
	if got := nodeMetric(t, node.Node, "kbroker_consumer_group_lag", "group", "lagging", "topic", "lagged", "partition", "0"); got != produced-4 {
		t.Errorf("lag of lagged-0: %v, want %d", got, produced-4)
	}
	if got := nodeMetric(t, node.Node, "kbroker_consumer_group_lag", "group", "lagging", "topic", "lagged", "partition", "1"); got != 0 {
		t.Errorf("lag of lagged-1: %v, want 0", got)
	}
	if got := nodeMetric(t, node.Node, "kbroker_consumer_group_lag_sum", "group", "lagging"); got != produced-4 {
		t.Errorf("lag sum: %v, want %d", got, produced-4)
	}
	if got := nodeMetric(t, node.Node, "kbroker_consumer_group_lag_unknown_partitions", "group", "lagging"); got != 0 {
		t.Errorf("unknown partitions: %v, want 0", got)
	}

	// One broker: every partition it leads has one replica, so it is at
	// its minimum ISR and never under it.
	leaders := nodeMetric(t, node.Node, "kbroker_leader_partitions")
	if got := nodeMetric(t, node.Node, "kbroker_at_min_isr_partitions"); leaders < 2 || got != leaders {
		t.Errorf("at min ISR %v, want every led partition (%v)", got, leaders)
	}
	if got := nodeMetric(t, node.Node, "kbroker_under_min_isr_partitions"); got != 0 {
		t.Errorf("under min ISR %v, want 0", got)
	}

	part, err := node.replicas.Partition(replication.TopicPartition{Topic: "lagged", Partition: 0})
	if err != nil {
		t.Fatal(err)
	}
	size := float64(part.Log().Size())
	if got := nodeMetric(t, node.Node, "kbroker_log_size_bytes", "topic", "lagged", "partition", "0"); size == 0 || got != size {
		t.Errorf("log size of lagged-0: %v, want %v (non-zero)", got, size)
	}
	if got := nodeMetric(t, node.Node, "kbroker_log_dir_size_bytes"); got < size {
		t.Errorf("log dir size %v, want at least lagged-0's %v", got, size)
	}
}
