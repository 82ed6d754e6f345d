package metadata

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/quick"

	"github.com/kbroker/kbroker/metadata/decisions"
)

func TestValidateTopicName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"orders", true},
		{"a.b_c-D9", true},
		{strings.Repeat("x", 249), true},
		{"..a", true},
		{"", false},
		{".", false},
		{"..", false},
		{strings.Repeat("x", 250), false},
		{"a b", false},
		{"a/b", false},
		{"ä", false},
		{"a:b", false},
	} {
		err := ValidateTopicName(tc.name)
		if (err == nil) != tc.ok || err != nil && !errors.Is(err, ErrInvalidTopic) {
			t.Errorf("%q: got %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

// TestPlaceReplicas: every partition gets rf distinct brokers from the
// list, and leaders (first replicas) are spread evenly.
func TestPlaceReplicas(t *testing.T) {
	prop := func(nb, n, rf uint8, start uint16) bool {
		brokers := make([]int32, 1+int(nb)%7)
		for i := range brokers {
			brokers[i] = int32(10 * i)
		}
		parts := 1 + int32(n)%50
		r := 1 + int16(rf)%int16(len(brokers))
		a := decisions.PlaceReplicas(brokers, parts, r, int(start)%len(brokers))
		leaders := map[int32]int{}
		for _, replicas := range a {
			if len(replicas) != int(r) || checkReplicas(replicas) != nil {
				return false
			}
			for _, id := range replicas {
				if !slices.Contains(brokers, id) {
					return false
				}
			}
			leaders[replicas[0]]++
		}
		lo, hi := int(parts), 0
		for _, b := range brokers {
			lo, hi = min(lo, leaders[b]), max(hi, leaders[b])
		}
		return hi-lo <= 1
	}
	if err := quick.Check(prop, nil); err != nil {
		t.Fatal(err)
	}
}

// testImage has brokers 1, 2, 3 (3 fenced) and topic "exists".
func testImage(t *testing.T) *Image {
	img := emptyImage()
	var index uint64
	apply := func(typ recordType, payload any) {
		index++
		var res any
		img, res = applyEntry(img, index, mustEncode(t, typ, payload))
		if err, ok := res.(error); ok {
			t.Fatal(err)
		}
	}
	for id := int32(1); id <= 3; id++ {
		apply(recRegisterBroker, &registerBrokerRecord{BrokerID: id, IncarnationID: fmt.Sprint(id)})
	}
	apply(recFenceBroker, &fenceBrokerRecord{BrokerID: 3, BrokerEpoch: img.Brokers[3].Epoch})
	apply(recCreateTopic, &createTopicRecord{Name: "exists.x", TopicID: [16]byte{1}, Partitions: []partitionRecord{
		{Replicas: []int32{1}, ISR: []int32{1}, Leader: 1},
	}})
	return img
}

func TestPlanTopic(t *testing.T) {
	img := testImage(t)
	badConfig := func(c map[string]string) error {
		if _, ok := c["bad.key"]; ok {
			return errors.New("bad.key: not a topic config")
		}
		return nil
	}
	pl := planner{img: img, partitions: 3, rf: 2, validate: badConfig}
	for _, tc := range []struct {
		name string
		spec TopicSpec
		want error
	}{
		{"defaults", TopicSpec{Name: "t", NumPartitions: -1, ReplicationFactor: -1}, nil},
		{"explicit counts", TopicSpec{Name: "t", NumPartitions: 5, ReplicationFactor: 1}, nil},
		{"exists", TopicSpec{Name: "exists.x", NumPartitions: 1, ReplicationFactor: 1}, ErrTopicExists},
		{"collides", TopicSpec{Name: "exists_x", NumPartitions: 1, ReplicationFactor: 1}, ErrInvalidTopic},
		{"bad name", TopicSpec{Name: "a*b", NumPartitions: 1, ReplicationFactor: 1}, ErrInvalidTopic},
		{"dot", TopicSpec{Name: ".", NumPartitions: 1, ReplicationFactor: 1}, ErrInvalidTopic},
		{"zero partitions", TopicSpec{Name: "t", NumPartitions: 0, ReplicationFactor: 1}, ErrInvalidPartitions},
		{"too many partitions", TopicSpec{Name: "t", NumPartitions: MaxPartitions + 1, ReplicationFactor: 1}, ErrInvalidPartitions},
		{"rf zero", TopicSpec{Name: "t", NumPartitions: 1, ReplicationFactor: 0}, ErrInvalidReplicationFactor},
		{"rf above unfenced", TopicSpec{Name: "t", NumPartitions: 1, ReplicationFactor: 3}, ErrInvalidReplicationFactor},
		{"bad config", TopicSpec{Name: "t", NumPartitions: 1, ReplicationFactor: 1, Configs: map[string]string{"bad.key": "1"}}, ErrInvalidConfig},
		{"assignment", TopicSpec{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignments: map[int32][]int32{0: {3, 1}, 1: {2, 3}}}, nil},
		{"assignment with counts", TopicSpec{Name: "t", NumPartitions: 2, ReplicationFactor: -1, Assignments: map[int32][]int32{0: {1}, 1: {2}}}, ErrInvalidReplicaAssignment},
		{"assignment gap", TopicSpec{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignments: map[int32][]int32{0: {1}, 2: {2}}}, ErrInvalidReplicaAssignment},
		{"assignment unknown broker", TopicSpec{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignments: map[int32][]int32{0: {1, 7}}}, ErrInvalidReplicaAssignment},
		{"assignment duplicate broker", TopicSpec{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignments: map[int32][]int32{0: {1, 1}}}, ErrInvalidReplicaAssignment},
		{"assignment uneven", TopicSpec{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignments: map[int32][]int32{0: {1, 2}, 1: {2}}}, ErrInvalidReplicaAssignment},
		{"assignment empty replicas", TopicSpec{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignments: map[int32][]int32{0: {}}}, ErrInvalidReplicaAssignment},
		{"assignment only fenced", TopicSpec{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignments: map[int32][]int32{0: {3}}}, ErrInvalidReplicaAssignment},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, err := pl.plan(tc.spec, [16]byte{2}, 1)
			if !errors.Is(err, tc.want) || (err == nil) != (tc.want == nil) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if err != nil {
				return
			}
			// The record must be accepted by the FSM.
			next, res := applyEntry(img, img.Offset+1, mustEncode(t, recCreateTopic, rec))
			if err, ok := res.(error); ok {
				t.Fatalf("FSM rejected the planned record: %v", err)
			}
			checkImage(t, next)
			for _, p := range next.Topics[tc.spec.Name].Partitions {
				if p.Leader == 3 || p.Leader == NoLeader || !slices.Equal(p.ISR, p.Replicas) {
					t.Fatalf("partition %+v: want an unfenced leader and ISR = replicas", p)
				}
			}
		})
	}
	// The defaults were used.
	rec, _ := pl.plan(TopicSpec{Name: "t", NumPartitions: -1, ReplicationFactor: -1}, [16]byte{2}, 0)
	if len(rec.Partitions) != 3 || len(rec.Partitions[0].Replicas) != 2 {
		t.Fatalf("defaults not applied: %+v", rec.Partitions)
	}
	// Leader of {3, 1} skips fenced 3.
	rec, _ = pl.plan(TopicSpec{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignments: map[int32][]int32{0: {3, 1}}}, [16]byte{2}, 0)
	if rec.Partitions[0].Leader != 1 {
		t.Fatalf("leader %d, want 1", rec.Partitions[0].Leader)
	}
}
