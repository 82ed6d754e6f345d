package groupcoord

import (
	"slices"
	"testing"

	"github.com/kbroker/kbroker/cluster/group"
	"github.com/kbroker/kbroker/metadata"
)

// TestCoordinatorLag commits offsets and checks the lag against the high
// watermarks this broker knows: lag M−N for a commit at N with high
// watermark M, 0 for a commit past it, unknown for a partition hosted
// elsewhere, nothing for a deleted topic or an offset of −1.
func TestCoordinatorLag(t *testing.T) {
	host := newFakeGroupsHost()
	host.addTopic(1)
	// Topics "t" (3 partitions) and "elsewhere" (1) exist; "deleted" does not.
	host.mu.Lock()
	img := *host.img
	img.Topics = map[string]*metadata.Topic{OffsetsTopic: img.Topics[OffsetsTopic]}
	for name, n := range map[string]int32{"t": 3, "elsewhere": 1} {
		tp := &metadata.Topic{Name: name}
		for p := range n {
			tp.Partitions = append(tp.Partitions, &metadata.Partition{ID: p, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1})
		}
		img.Topics[name] = tp
	}
	host.img = &img
	host.mu.Unlock()
	c := startCoordinator(t, host, testConfig)
	lead(c, host.replica(0), 0, 1)
	waitLoaded(t, c, "g")

	hws := map[group.TopicPartition]int64{
		{Topic: "t", Partition: 0}: 100,
		{Topic: "t", Partition: 1}: 50,
		{Topic: "t", Partition: 2}: 7,
	}
	hw := func(topic string, p int32) (int64, bool) {
		v, ok := hws[group.TopicPartition{Topic: topic, Partition: p}]
		return v, ok
	}

	tests := []struct {
		name      string
		group     string
		tp        group.TopicPartition
		committed int64
		wantLag   int64 // -1: no PartitionLag
		unknown   int
	}{
		{"behind", "a", group.TopicPartition{Topic: "t", Partition: 0}, 40, 60, 0},
		{"caught up", "b", group.TopicPartition{Topic: "t", Partition: 1}, 50, 0, 0},
		{"past the high watermark", "c", group.TopicPartition{Topic: "t", Partition: 2}, 9, 0, 0},
		{"from the start", "d", group.TopicPartition{Topic: "t", Partition: 0}, 0, 100, 0},
		{"hosted elsewhere", "e", group.TopicPartition{Topic: "elsewhere", Partition: 0}, 3, -1, 1},
		{"deleted topic", "f", group.TopicPartition{Topic: "deleted", Partition: 0}, 3, -1, 0},
		{"partition past the topic's", "g", group.TopicPartition{Topic: "elsewhere", Partition: 5}, 3, -1, 0},
		{"nothing consumed", "h", group.TopicPartition{Topic: "t", Partition: 0}, -1, -1, 0},
	}
	for _, tc := range tests {
		var res commitResult
		c.CommitOffsets(tc.group, CommitMember{Generation: -1}, []PartitionOffset{{TP: tc.tp, Offset: tc.committed, LeaderEpoch: -1}}, res.done)
		if errs, n := res.get(); n != 1 || errs[0] != nil {
			t.Fatalf("%s: commit answered %d times: %v", tc.name, n, errs)
		}
	}

	rep := c.Lag(hw)
	if len(rep.Groups) != len(tests) {
		t.Fatalf("groups %+v, want one per case", rep.Groups)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			i := slices.IndexFunc(rep.Groups, func(g GroupLag) bool { return g.Group == tc.group })
			if i < 0 {
				t.Fatalf("group %s not reported: %+v", tc.group, rep.Groups)
			}
			g := rep.Groups[i]
			j := slices.IndexFunc(rep.Partitions, func(p PartitionLag) bool { return p.Group == tc.group })
			if tc.wantLag < 0 {
				if j >= 0 {
					t.Fatalf("partition reported: %+v", rep.Partitions[j])
				}
			} else {
				if j < 0 {
					t.Fatalf("no partition lag for %s: %+v", tc.group, rep.Partitions)
				}
				p := rep.Partitions[j]
				want := PartitionLag{Group: tc.group, Topic: tc.tp.Topic, Partition: tc.tp.Partition,
					Committed: tc.committed, HighWatermark: hws[tc.tp], Lag: tc.wantLag}
				if p != want {
					t.Fatalf("partition lag %+v, want %+v", p, want)
				}
			}
			if wantSum := max(tc.wantLag, 0); g.Lag != wantSum || g.Unknown != tc.unknown {
				t.Fatalf("group %+v, want lag %d unknown %d", g, wantSum, tc.unknown)
			}
		})
	}

	// Two partitions of one group add up, and the report follows commits.
	var res commitResult
	c.CommitOffsets("a", CommitMember{Generation: -1}, []PartitionOffset{
		{TP: group.TopicPartition{Topic: "t", Partition: 0}, Offset: 90, LeaderEpoch: -1},
		{TP: group.TopicPartition{Topic: "t", Partition: 1}, Offset: 45, LeaderEpoch: -1},
	}, res.done)
	if errs, _ := res.get(); errs[0] != nil || errs[1] != nil {
		t.Fatalf("commit: %v", errs)
	}
	rep = c.Lag(hw)
	if g := rep.Groups[0]; g.Group != "a" || g.Lag != 10+5 {
		t.Fatalf("group a %+v, want lag 15", g)
	}
	if got := rep.Partitions[:2]; got[0].Lag != 10 || got[1].Lag != 5 || got[0].Partition != 0 || got[1].Partition != 1 {
		t.Fatalf("group a partitions %+v, want lags 10 and 5 in partition order", got)
	}
}
