package metadata

import (
	"reflect"
	"slices"
	"testing"

	"github.com/kbroker/kbroker/metadata/decisions"
)

func aliveSet(ids ...int32) func(int32) bool {
	return func(id int32) bool { return slices.Contains(ids, id) }
}

func TestElectLeader(t *testing.T) {
	for _, tc := range []struct {
		name     string
		replicas []int32
		isr      []int32
		alive    []int32
		unclean  bool
		want     int32
	}{
		{"first replica in ISR and alive", []int32{1, 2, 3}, []int32{1, 2, 3}, []int32{1, 2, 3}, false, 1},
		{"assignment order, not ISR order", []int32{3, 1, 2}, []int32{1, 2, 3}, []int32{1, 2, 3}, false, 3},
		{"skips dead", []int32{1, 2, 3}, []int32{1, 2, 3}, []int32{2, 3}, false, 2},
		{"skips non-ISR", []int32{1, 2, 3}, []int32{3}, []int32{1, 2, 3}, false, 3},
		{"no alive ISR member", []int32{1, 2, 3}, []int32{1}, []int32{2, 3}, false, NoLeader},
		{"unclean picks first alive", []int32{1, 2, 3}, []int32{1}, []int32{3, 2}, true, 2},
		{"unclean prefers ISR", []int32{1, 2, 3}, []int32{3}, []int32{1, 2, 3}, true, 3},
		{"unclean, nobody alive", []int32{1, 2}, []int32{1}, nil, true, NoLeader},
		{"alive non-replica ignored", []int32{1, 2}, []int32{1, 2}, []int32{9}, true, NoLeader},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Partition{Replicas: tc.replicas, ISR: tc.isr}
			if got := decisions.ElectLeader(p, aliveSet(tc.alive...), tc.unclean); got != tc.want {
				t.Fatalf("got %d, want %d", got, tc.want)
			}
		})
	}
}

func TestFencePartition(t *testing.T) {
	for _, tc := range []struct {
		name                string
		replicas, isr       []int32
		leader              int32
		fenced              int32
		alive               []int32 // without the fenced broker
		unclean             bool
		wantNil             bool
		wantLeader          int32
		wantISR             []int32
		wantLE, wantPE      int32
		leaderEp, partEpoch int32
	}{
		{name: "not involved", replicas: []int32{1, 2}, isr: []int32{1, 2}, leader: 1, fenced: 3, alive: []int32{1, 2}, wantNil: true},
		{name: "leader moves within ISR", replicas: []int32{1, 2, 3}, isr: []int32{1, 2, 3}, leader: 1, fenced: 1, alive: []int32{2, 3},
			wantLeader: 2, wantISR: []int32{2, 3}, wantLE: 6, wantPE: 8, leaderEp: 5, partEpoch: 7},
		{name: "follower leaves ISR", replicas: []int32{1, 2, 3}, isr: []int32{1, 2, 3}, leader: 1, fenced: 3, alive: []int32{1, 2},
			wantLeader: 1, wantISR: []int32{1, 2}, wantLE: 5, wantPE: 8, leaderEp: 5, partEpoch: 7},
		{name: "never elects outside ISR", replicas: []int32{1, 2, 3}, isr: []int32{1, 3}, leader: 1, fenced: 1, alive: []int32{2},
			wantLeader: NoLeader, wantISR: []int32{3}, wantLE: 1, wantPE: 1},
		{name: "last ISR member stays", replicas: []int32{1, 2}, isr: []int32{1}, leader: 1, fenced: 1, alive: []int32{2},
			wantLeader: NoLeader, wantISR: []int32{1}, wantLE: 1, wantPE: 1},
		{name: "unclean elects outside ISR", replicas: []int32{1, 2, 3}, isr: []int32{1}, leader: 1, fenced: 1, alive: []int32{3, 2}, unclean: true,
			wantLeader: 2, wantISR: []int32{2}, wantLE: 1, wantPE: 1},
		{name: "unclean not needed", replicas: []int32{1, 2, 3}, isr: []int32{1, 3}, leader: 1, fenced: 1, alive: []int32{2, 3}, unclean: true,
			wantLeader: 3, wantISR: []int32{3}, wantLE: 1, wantPE: 1},
		{name: "offline partition, last member", replicas: []int32{1, 2}, isr: []int32{1}, leader: NoLeader, fenced: 1, alive: []int32{2}, wantNil: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Partition{Replicas: tc.replicas, ISR: tc.isr, Leader: tc.leader, LeaderEpoch: tc.leaderEp, PartitionEpoch: tc.partEpoch}
			before := *p
			beforeISR := slices.Clone(p.ISR)
			got := decisions.Fence(p, tc.fenced, aliveSet(tc.alive...), tc.unclean)
			if !reflect.DeepEqual(*p, before) || !slices.Equal(p.ISR, beforeISR) {
				t.Fatal("input modified")
			}
			if tc.wantNil {
				if got != nil {
					t.Fatalf("got %+v, want no change", got)
				}
				return
			}
			if got == nil || got.Leader != tc.wantLeader || !slices.Equal(got.ISR, tc.wantISR) ||
				got.LeaderEpoch != tc.wantLE || got.PartitionEpoch != tc.wantPE {
				t.Fatalf("got %+v, want leader %d ISR %v epochs %d/%d", got, tc.wantLeader, tc.wantISR, tc.wantLE, tc.wantPE)
			}
			if err := decisions.CheckISR(got.Replicas, got.Leader, got.ISR); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestUnfencePartition(t *testing.T) {
	for _, tc := range []struct {
		name       string
		isr        []int32
		leader     int32
		unfenced   int32
		alive      []int32
		wantLeader int32 // NoLeader: no change
	}{
		{"offline, broker in ISR", []int32{2}, NoLeader, 2, []int32{2, 3}, 2},
		{"offline, broker not in ISR", []int32{1}, NoLeader, 2, []int32{2, 3}, NoLeader},
		{"has a leader", []int32{1, 2}, 1, 2, []int32{1, 2}, NoLeader},
		{"earlier ISR member alive", []int32{1, 2}, NoLeader, 2, []int32{1, 2}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Partition{Replicas: []int32{1, 2, 3}, ISR: tc.isr, Leader: tc.leader, LeaderEpoch: 3, PartitionEpoch: 4}
			got := decisions.Unfence(p, tc.unfenced, aliveSet(tc.alive...))
			if tc.wantLeader == NoLeader {
				if got != nil {
					t.Fatalf("got %+v, want no change", got)
				}
				return
			}
			if got == nil || got.Leader != tc.wantLeader || got.LeaderEpoch != 4 || got.PartitionEpoch != 5 || !slices.Equal(got.ISR, tc.isr) {
				t.Fatalf("got %+v, want leader %d", got, tc.wantLeader)
			}
		})
	}
}

func TestPreferredLeader(t *testing.T) {
	for _, tc := range []struct {
		name   string
		isr    []int32
		leader int32
		alive  []int32
		want   int32
		ok     bool
	}{
		{"moves back", []int32{1, 2}, 2, []int32{1, 2}, 1, true},
		{"already preferred", []int32{1, 2}, 1, []int32{1, 2}, NoLeader, false},
		{"preferred dead", []int32{1, 2}, 2, []int32{2}, NoLeader, false},
		{"preferred not in ISR", []int32{2}, 2, []int32{1, 2}, NoLeader, false},
		{"offline partition", []int32{1}, NoLeader, []int32{1}, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Partition{Replicas: []int32{1, 2}, ISR: tc.isr, Leader: tc.leader}
			got, ok := decisions.PreferredLeader(p, aliveSet(tc.alive...))
			if got != tc.want || ok != tc.ok {
				t.Fatalf("got %d %v, want %d %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestFSMFencing: FenceBroker and UnfenceBroker records re-elect leaders in
// the FSM, deterministically, honouring the record's unclean topics.
func TestFSMFencing(t *testing.T) {
	img := emptyImage()
	var index uint64
	step := func(typ recordType, payload any) {
		t.Helper()
		index++
		var res any
		img, res = applyEntry(img, index, mustEncode(t, typ, payload))
		if err, ok := res.(error); ok {
			t.Fatalf("%v: %v", typ, err)
		}
		checkImage(t, img)
	}
	for id := int32(1); id <= 3; id++ {
		step(recRegisterBroker, &registerBrokerRecord{BrokerID: id, IncarnationID: "a"})
	}
	clean, dirty := [16]byte{1}, [16]byte{2}
	for _, tp := range []struct {
		name string
		id   [16]byte
	}{{"clean", clean}, {"dirty", dirty}} {
		step(recCreateTopic, &createTopicRecord{Name: tp.name, TopicID: tp.id, Partitions: []partitionRecord{
			{Partition: 0, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1},
			{Partition: 1, Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: 1},
		}})
	}
	step(recFenceBroker, &fenceBrokerRecord{BrokerID: 1, BrokerEpoch: img.Brokers[1].Epoch, UncleanTopics: [][16]byte{dirty}})
	part := func(topic string, p int32) *Partition { pp, _ := img.Partition(topic, p); return pp }
	for _, topic := range []string{"clean", "dirty"} {
		if p := part(topic, 0); p.Leader != 2 || !slices.Equal(p.ISR, []int32{2, 3}) || p.LeaderEpoch != 1 || p.PartitionEpoch != 1 {
			t.Fatalf("%s-0 after fence: %+v", topic, p)
		}
	}
	if p := part("clean", 1); p.Leader != NoLeader || !slices.Equal(p.ISR, []int32{1}) {
		t.Fatalf("clean-1 after fence: %+v", p)
	}
	if p := part("dirty", 1); p.Leader != 2 || !slices.Equal(p.ISR, []int32{2}) {
		t.Fatalf("dirty-1 after fence: %+v", p)
	}
	step(recUnfenceBroker, &fenceBrokerRecord{BrokerID: 1, BrokerEpoch: img.Brokers[1].Epoch})
	if p := part("clean", 1); p.Leader != 1 || p.LeaderEpoch != 2 || p.PartitionEpoch != 2 {
		t.Fatalf("clean-1 after unfence: %+v", p)
	}
	if p := part("clean", 0); p.Leader != 2 || slices.Contains(p.ISR, 1) {
		t.Fatalf("clean-0 after unfence: %+v (rejoins the ISR only through AlterPartition)", p)
	}
	// A new incarnation of a fenced broker is unfenced and elected too.
	step(recFenceBroker, &fenceBrokerRecord{BrokerID: 1, BrokerEpoch: img.Brokers[1].Epoch})
	if p := part("clean", 1); p.Leader != NoLeader {
		t.Fatalf("clean-1 after second fence: %+v", p)
	}
	step(recRegisterBroker, &registerBrokerRecord{BrokerID: 1, IncarnationID: "b"})
	if b := img.Brokers[1]; b.Fenced || b.Epoch != int64(index) {
		t.Fatalf("re-registered broker: %+v", b)
	}
	if p := part("clean", 1); p.Leader != 1 {
		t.Fatalf("clean-1 after re-registration: %+v", p)
	}
}

func TestFSMCreatePartitions(t *testing.T) {
	img := emptyImage()
	img, _ = applyEntry(img, 1, mustEncode(t, recRegisterBroker, &registerBrokerRecord{BrokerID: 1}))
	id := [16]byte{7}
	img, _ = applyEntry(img, 2, mustEncode(t, recCreateTopic, &createTopicRecord{Name: "t", TopicID: id,
		Partitions: []partitionRecord{{Partition: 0, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}}}))
	bad := &createPartitionsRecord{TopicID: id, Partitions: []partitionRecord{{Partition: 2, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}}}
	next, res := applyEntry(img, 3, mustEncode(t, recCreatePartitions, bad))
	if err, _ := res.(error); err == nil || len(next.Topics["t"].Partitions) != 1 {
		t.Fatalf("gap in partition numbers accepted: %v", res)
	}
	good := &createPartitionsRecord{TopicID: id, Partitions: []partitionRecord{{Partition: 1, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}}}
	next, res = applyEntry(img, 3, mustEncode(t, recCreatePartitions, good))
	if res != nil || len(next.Topics["t"].Partitions) != 2 || len(img.Topics["t"].Partitions) != 1 {
		t.Fatalf("create partitions: %v", res)
	}
	checkImage(t, next)
}
