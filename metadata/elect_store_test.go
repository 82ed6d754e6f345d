package metadata

import (
	"context"
	"errors"
	"fmt"
	"github.com/kbroker/kbroker/internal/testutil"
	"slices"
	"strings"
	"testing"
	"time"
)

// Through the controller: a partition whose last ISR member is fenced
// goes offline; a preferred election cannot help (the preferred replica
// is the fenced one), an unclean one elects an alive replica with an ISR
// of itself; electing every partition lists only the elections that were
// needed.
func TestStoreElectLeaders(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s := openReady(t, testConfig(t.TempDir()))
	for _, id := range []int32{1, 2, 3} {
		if err := s.RegisterBroker(ctx, BrokerRegistration{ID: id, IncarnationID: "inc", Endpoints: []Endpoint{{Listener: "PLAINTEXT", Host: "h", Port: 9092 + int32(id), SecurityProtocol: "PLAINTEXT"}}}); err != nil {
			t.Fatal(err)
		}
	}
	errs := s.CreateTopics(ctx, []TopicSpec{
		{Name: "u", NumPartitions: -1, ReplicationFactor: -1, Assignments: map[int32][]int32{0: {1, 2, 3}}},
		{Name: "p", NumPartitions: -1, ReplicationFactor: -1, Assignments: map[int32][]int32{0: {2, 3}}},
	}, false)
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	change := func(topic string, leader int32, isr ...int32) {
		t.Helper()
		p, _ := s.Image().Partition(topic, 0)
		if err := s.ChangePartition(ctx, PartitionChange{Topic: topic, Partition: 0, Leader: leader, ISR: isr,
			LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch}); err != nil {
			t.Fatal(err)
		}
	}
	change("u", 1, 1)
	change("p", 3, 2, 3)
	if err := s.FenceBroker(ctx, 1, s.Image().Brokers[1].Epoch); err != nil {
		t.Fatal(err)
	}
	if p, _ := s.Image().Partition("u", 0); p.Leader != NoLeader || !slices.Equal(p.ISR, []int32{1}) {
		t.Fatalf("u-0 after fencing its only ISR member: %+v", p)
	}

	elect := func(typ ElectionType, parts []TopicPartitions) []ElectionResult {
		t.Helper()
		res, err := s.ElectLeaders(ctx, typ, parts)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	u0 := []TopicPartitions{{Topic: "u", Partitions: []int32{0}}}
	if res := elect(ElectPreferred, u0); len(res) != 1 || res[0].Outcome != PreferredLeaderNotAvailable {
		t.Fatalf("preferred u-0: %+v", res)
	}
	before, _ := s.Image().Partition("u", 0)
	if res := elect(ElectUnclean, u0); len(res) != 1 || res[0].Outcome != Elected {
		t.Fatalf("unclean u-0: %+v", res)
	}
	after, _ := s.Image().Partition("u", 0)
	if after.Leader != 2 || !slices.Equal(after.ISR, []int32{2}) || after.LeaderEpoch != before.LeaderEpoch+1 {
		t.Fatalf("u-0 after the unclean election: %+v (before %+v)", after, before)
	}

	res := elect(ElectPreferred, nil)
	slices.SortFunc(res, func(a, b ElectionResult) int { return strings.Compare(a.Topic, b.Topic) })
	want := []ElectionResult{
		{Topic: "p", Partition: 0, Outcome: Elected},
		{Topic: "u", Partition: 0, Outcome: PreferredLeaderNotAvailable},
	}
	if len(res) != len(want) || res[0].Outcome != want[0].Outcome || res[0].Topic != "p" || res[1].Outcome != want[1].Outcome {
		t.Fatalf("preferred, every partition: %+v, want %+v", res, want)
	}
	if p, _ := s.Image().Partition("p", 0); p.Leader != 2 {
		t.Fatalf("p-0 leader %d, want its preferred 2", p.Leader)
	}
	if res := elect(ElectUnclean, nil); len(res) != 0 {
		t.Fatalf("unclean, every partition, all led: %+v", res)
	}
	if res := elect(ElectUnclean, []TopicPartitions{{Topic: "nope", Partitions: []int32{0}}, {Topic: "u", Partitions: []int32{5}}}); len(res) != 2 ||
		res[0].Outcome != ElectionUnknownPartition || res[1].Outcome != ElectionUnknownPartition {
		t.Fatalf("unknown partitions: %+v", res)
	}
	if _, err := s.ElectLeaders(ctx, 7, nil); err == nil {
		t.Fatal("election type 7 accepted")
	}
}

// ElectLeaders asked on a follower is forwarded to the active controller
// and answers the same typed results.
func TestClusterElectLeadersForwarded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := newTestCluster(t, 3, nil)
	c.converged()
	f := c.follower()
	c.registerBrokers(ctx, f, 1, 2)
	if errs := f.CreateTopics(ctx, []TopicSpec{{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignments: map[int32][]int32{0: {1, 2}}}}, false); errs[0] != nil {
		t.Fatal(errs[0])
	}
	p, _ := c.leader().Image().Partition("t", 0)
	if err := c.leader().ChangePartition(ctx, PartitionChange{Topic: "t", Partition: 0, Leader: 2, ISR: p.ISR,
		LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch}); err != nil {
		t.Fatal(err)
	}
	res, err := f.ElectLeaders(ctx, ElectPreferred, []TopicPartitions{{Topic: "t", Partitions: []int32{0}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Topic != "t" || res[0].Outcome != Elected {
		t.Fatalf("results %+v", res)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		p, ok := f.Image().Partition("t", 0)
		if !ok {
			return errors.New("the follower has not applied the topic yet")
		}
		if p.Leader != 1 {
			return fmt.Errorf("leader %d", p.Leader)
		}
		return nil
	}, "the follower sees the preferred leader")
}
