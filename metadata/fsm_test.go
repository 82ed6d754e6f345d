package metadata

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"testing"
	"testing/quick"

	"github.com/hashicorp/raft"
	"github.com/kbroker/kbroker/metadata/decisions"
)

func mustEncode(t testing.TB, typ recordType, payload any) []byte {
	t.Helper()
	b, err := encodeRecord(typ, payload)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// genLog builds a plausible record sequence from seed: it keeps a model
// image (by applying as it goes) so that many records are accepted, and
// perturbs some so that others are rejected (stale epochs, unknown ids,
// existing names).
func genLog(t testing.TB, seed uint64, n int) [][]byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	img := emptyImage()
	var log [][]byte
	names := []string{"a", "b", "c.d", "c_d", "events", "logs"}
	randomID := func() [16]byte {
		var id [16]byte
		for i := range id {
			id[i] = byte(r.IntN(256))
		}
		id[0] |= 1 // never zero
		return id
	}
	someTopic := func() *Topic {
		for _, name := range img.TopicNames() {
			if r.IntN(2) == 0 {
				return img.Topics[name]
			}
		}
		return nil
	}
	for i := 0; i < n; i++ {
		var data []byte
		switch r.IntN(11) {
		case 0:
			id := int32(r.IntN(5))
			data = mustEncode(t, recRegisterBroker, &registerBrokerRecord{
				BrokerID:      id,
				IncarnationID: fmt.Sprintf("inc-%d", r.IntN(3)),
				Endpoints:     []Endpoint{{Listener: "PLAINTEXT", Host: "h", Port: 9092 + id, SecurityProtocol: "PLAINTEXT"}},
				Rack:          []string{"", "r1"}[r.IntN(2)],
			})
		case 1, 2:
			id := int32(r.IntN(5))
			var epoch int64
			if b, ok := img.Brokers[id]; ok && r.IntN(4) > 0 {
				epoch = b.Epoch
			}
			typ := recFenceBroker
			if r.IntN(2) == 0 {
				typ = recUnfenceBroker
			}
			data = mustEncode(t, typ, &fenceBrokerRecord{BrokerID: id, BrokerEpoch: epoch})
		case 3:
			brokers := img.UnfencedBrokerIDs()
			spec := TopicSpec{Name: names[r.IntN(len(names))], NumPartitions: int32(1 + r.IntN(4)), ReplicationFactor: int16(1 + r.IntN(3))}
			if r.IntN(3) == 0 {
				spec.Configs = map[string]string{"cleanup.policy": "compact", "retention.ms": "1000"}
			}
			pl := planner{img: img, partitions: 1, rf: 1}
			rec, err := pl.plan(spec, randomID(), r.IntN(8))
			if err != nil {
				// Propose something the FSM must reject or accept on its own.
				rec = &createTopicRecord{Name: spec.Name, TopicID: randomID(), Partitions: []partitionRecord{{Replicas: brokers, ISR: brokers, Leader: NoLeader}}}
			}
			data = mustEncode(t, recCreateTopic, rec)
		case 4:
			if r.IntN(3) > 0 {
				continue // keep some topics around
			}
			id := randomID()
			if tp := someTopic(); tp != nil {
				id = tp.ID
			}
			data = mustEncode(t, recDeleteTopic, &deleteTopicRecord{TopicID: id})
		case 5, 6:
			tp := someTopic()
			if tp == nil {
				continue
			}
			p := tp.Partitions[r.IntN(len(tp.Partitions))]
			isr := []int32{}
			for _, id := range p.Replicas {
				if r.IntN(3) > 0 {
					isr = append(isr, id)
				}
			}
			leader := NoLeader
			if len(isr) > 0 {
				leader = isr[r.IntN(len(isr))]
			}
			data = mustEncode(t, recPartitionChange, &partitionChangeRecord{
				TopicID: tp.ID, Partition: p.ID, Leader: leader, ISR: isr,
				LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch - int32(r.IntN(2)),
			})
		case 7:
			tp := someTopic()
			if tp == nil {
				continue
			}
			data = mustEncode(t, recConfigChange, &configChangeRecord{
				TopicID: tp.ID,
				Set:     map[string]string{"retention.ms": fmt.Sprint(r.IntN(100)), "segment.bytes": "1024"},
				Remove:  []string{"cleanup.policy", "nope"},
			})
		case 8:
			if r.IntN(2) == 0 {
				data = mustEncode(t, recProducerIDBlock, &producerIDBlockRecord{BrokerID: 1, FirstProducerID: img.NextProducerID - int64(r.IntN(2)), Count: 1000})
			} else {
				data = mustEncode(t, recSetClusterID, &setClusterIDRecord{ClusterID: encodeUUID(randomID())})
			}
		case 9:
			id := int32(r.IntN(5))
			var epoch int64
			if b, ok := img.Brokers[id]; ok && r.IntN(4) > 0 {
				epoch = b.Epoch
			}
			data = mustEncode(t, recUnregisterBroker, &unregisterBrokerRecord{BrokerID: id, BrokerEpoch: epoch})
		case 10:
			data = mustEncode(t, recBrokerConfigChange, &brokerConfigChangeRecord{
				BrokerID: int32(r.IntN(5)),
				Set:      map[string]string{"log.retention.ms": fmt.Sprint(r.IntN(100))},
				Remove:   []string{[]string{"log.retention.ms", "log.cleaner.threads"}[r.IntN(2)]},
			})
		}
		img, _ = applyEntry(img, uint64(len(log)+1), data)
		log = append(log, data)
	}
	return log
}

func applyAll(f *fsm, log [][]byte) {
	for i, data := range log {
		f.Apply(&raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: data})
	}
}

func newTestFSM() *fsm { return newFSM(slog.New(slog.DiscardHandler)) }

// checkImage checks the invariants every image must hold.
func checkImage(t testing.TB, img *Image) {
	t.Helper()
	if len(img.Topics) != len(img.TopicsByID) {
		t.Fatalf("%d topics by name, %d by id", len(img.Topics), len(img.TopicsByID))
	}
	for name, tp := range img.Topics {
		if tp.Name != name || img.TopicsByID[tp.ID] != tp {
			t.Fatalf("topic %q: indexes disagree", name)
		}
		for i, p := range tp.Partitions {
			if p.ID != int32(i) {
				t.Fatalf("%s: partition %d at %d", name, p.ID, i)
			}
			if err := decisions.CheckISR(p.Replicas, p.Leader, p.ISR); err != nil {
				t.Fatalf("%s-%d: %v", name, i, err)
			}
		}
	}
	if err := checkIndexes(img); err != nil {
		t.Fatal(err)
	}
}

func snapshotBytes(t testing.TB, img *Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := writeSnapshot(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestFSMDeterminism: the same log gives deep-equal images on two FSMs,
// and snapshot -> restore gives the same image again.
func TestFSMDeterminism(t *testing.T) {
	prop := func(seed uint64) bool {
		log := genLog(t, seed, 300)
		a, b := newTestFSM(), newTestFSM()
		applyAll(a, log)
		applyAll(b, log)
		ia, ib := a.image(), b.image()
		checkImage(t, ia)
		if !sameImage(ia, ib) {
			t.Logf("seed %d: images differ", seed)
			return false
		}
		if ia.Offset != uint64(len(log)) {
			t.Logf("seed %d: offset %d, want %d", seed, ia.Offset, len(log))
			return false
		}
		c := newTestFSM()
		if err := c.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, ia)))); err != nil {
			t.Log(err)
			return false
		}
		if !sameImage(ia, c.image()) {
			t.Logf("seed %d: restored image differs", seed)
			return false
		}
		// A snapshot in the middle of the log, restored, then the rest
		// applied, ends in the same image.
		mid := len(log) / 2
		d := newTestFSM()
		applyAll(d, log[:mid])
		e := newTestFSM()
		if err := e.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, d.image())))); err != nil {
			t.Log(err)
			return false
		}
		for i := mid; i < len(log); i++ {
			e.Apply(&raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: log[i]})
		}
		if !sameImage(ia, e.image()) {
			t.Logf("seed %d: snapshot+tail differs", seed)
			return false
		}
		return true
	}
	if err := quick.Check(prop, &quick.Config{MaxCount: 50}); err != nil {
		t.Fatal(err)
	}
}

// TestFSMCopyOnWrite: applying never modifies an image already published.
func TestFSMCopyOnWrite(t *testing.T) {
	log := genLog(t, 7, 400)
	f := newTestFSM()
	for i, data := range log {
		before := f.image()
		snap := snapshotBytes(t, before)
		ch := f.changed()
		f.Apply(&raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: data})
		if !bytes.Equal(snap, snapshotBytes(t, before)) {
			t.Fatalf("entry %d modified the previous image", i+1)
		}
		select {
		case <-ch:
		default:
			t.Fatalf("entry %d: Changed channel not closed", i+1)
		}
	}
}

// TestFSMRecords is a scenario through every record type, with the
// rejections the FSM must make.
func TestFSMRecords(t *testing.T) {
	img := emptyImage()
	var index uint64
	step := func(typ recordType, payload any, wantErr error) any {
		t.Helper()
		index++
		prev := img
		var res any
		img, res = applyEntry(img, index, mustEncode(t, typ, payload))
		err, _ := res.(error)
		if wantErr == nil && err != nil || wantErr != nil && !errors.Is(err, wantErr) {
			t.Fatalf("%v at %d: got %v, want %v", typ, index, err, wantErr)
		}
		if err != nil {
			want := prev.next(index)
			if !sameImage(img, want) {
				t.Fatalf("%v rejected but the image changed", typ)
			}
		}
		checkImage(t, img)
		return res
	}
	ep := []Endpoint{{Listener: "PLAINTEXT", Host: "localhost", Port: 9092, SecurityProtocol: "PLAINTEXT"}}
	step(recRegisterBroker, &registerBrokerRecord{BrokerID: 1, IncarnationID: "x", Endpoints: ep}, nil)
	step(recRegisterBroker, &registerBrokerRecord{BrokerID: 2, IncarnationID: "y", Endpoints: ep}, nil)
	if img.Brokers[1].Epoch != 1 || img.Brokers[2].Epoch != 2 {
		t.Fatalf("broker epochs %d %d", img.Brokers[1].Epoch, img.Brokers[2].Epoch)
	}
	step(recRegisterBroker, &registerBrokerRecord{BrokerID: 1, IncarnationID: "x", Endpoints: ep, Rack: "r"}, nil)
	if b := img.Brokers[1]; b.Epoch != 1 || b.Rack != "r" {
		t.Fatalf("same incarnation: %+v", b)
	}
	step(recFenceBroker, &fenceBrokerRecord{BrokerID: 1, BrokerEpoch: 0}, ErrStaleBrokerEpoch)
	step(recFenceBroker, &fenceBrokerRecord{BrokerID: 9, BrokerEpoch: 0}, ErrUnknownBroker)
	step(recFenceBroker, &fenceBrokerRecord{BrokerID: 1, BrokerEpoch: 1}, nil)
	if !img.Brokers[1].Fenced || !reflect.DeepEqual(img.UnfencedBrokerIDs(), []int32{2}) {
		t.Fatal("broker 1 not fenced")
	}
	step(recUnfenceBroker, &fenceBrokerRecord{BrokerID: 1, BrokerEpoch: 1}, nil)
	step(recRegisterBroker, &registerBrokerRecord{BrokerID: 1, IncarnationID: "x2", Endpoints: ep}, nil)
	if img.Brokers[1].Epoch != int64(index) {
		t.Fatal("new incarnation kept the old epoch")
	}

	id := [16]byte{1, 2, 3}
	create := &createTopicRecord{Name: "t", TopicID: id, Partitions: []partitionRecord{
		{Partition: 0, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1},
		{Partition: 1, Replicas: []int32{2, 1}, ISR: []int32{2, 1}, Leader: 2},
	}, Configs: map[string]string{"retention.ms": "5"}}
	step(recCreateTopic, create, nil)
	step(recCreateTopic, create, ErrTopicExists)
	step(recCreateTopic, &createTopicRecord{Name: "u", TopicID: id, Partitions: create.Partitions}, ErrInvalidTopic)
	step(recCreateTopic, &createTopicRecord{Name: "a/b", TopicID: [16]byte{9}, Partitions: create.Partitions}, ErrInvalidTopic)
	step(recCreateTopic, &createTopicRecord{Name: "v", TopicID: [16]byte{9}}, ErrInvalidPartitions)

	tp := img.Topics["t"]
	step(recPartitionChange, &partitionChangeRecord{TopicID: id, Partition: 0, Leader: 1, ISR: []int32{1}}, nil)
	if p, _ := img.Partition("t", 0); p.PartitionEpoch != 1 || p.LeaderEpoch != 0 || !reflect.DeepEqual(p.ISR, []int32{1}) {
		t.Fatalf("after ISR shrink: %+v", p)
	}
	if img.Topics["t"].Partitions[1] != tp.Partitions[1] {
		t.Fatal("unchanged partition not shared")
	}
	step(recPartitionChange, &partitionChangeRecord{TopicID: id, Partition: 0, Leader: 1, ISR: []int32{1, 2}}, ErrStalePartitionEpoch)
	step(recPartitionChange, &partitionChangeRecord{TopicID: id, Partition: 0, Leader: 2, ISR: []int32{1}, PartitionEpoch: 1}, ErrInvalidPartitionChange)
	step(recPartitionChange, &partitionChangeRecord{TopicID: id, Partition: 0, Leader: 1, ISR: []int32{1, 3}, PartitionEpoch: 1}, ErrInvalidPartitionChange)
	step(recPartitionChange, &partitionChangeRecord{TopicID: id, Partition: 0, Leader: 2, ISR: []int32{2}, LeaderEpoch: 1, PartitionEpoch: 1}, ErrFencedLeaderEpoch)
	step(recPartitionChange, &partitionChangeRecord{TopicID: id, Partition: 5, Leader: 2, ISR: []int32{2}}, ErrUnknownTopic)
	step(recPartitionChange, &partitionChangeRecord{TopicID: id, Partition: 0, Leader: 2, ISR: []int32{2}, PartitionEpoch: 1}, nil)
	if p, _ := img.Partition("t", 0); p.Leader != 2 || p.LeaderEpoch != 1 || p.PartitionEpoch != 2 {
		t.Fatalf("after leader change: %+v", p)
	}
	// KIP-841: a fenced broker cannot join an ISR; once unfenced it can.
	epoch1 := img.Brokers[1].Epoch
	step(recFenceBroker, &fenceBrokerRecord{BrokerID: 1, BrokerEpoch: epoch1}, nil)
	step(recPartitionChange, &partitionChangeRecord{TopicID: id, Partition: 0, Leader: 2, ISR: []int32{2, 1}, LeaderEpoch: 1, PartitionEpoch: 2}, ErrInvalidPartitionChange)
	step(recUnfenceBroker, &fenceBrokerRecord{BrokerID: 1, BrokerEpoch: epoch1}, nil)
	step(recPartitionChange, &partitionChangeRecord{TopicID: id, Partition: 0, Leader: 2, ISR: []int32{2, 1}, LeaderEpoch: 1, PartitionEpoch: 2}, nil)
	// Broker 2 restarts (new incarnation) before anyone fenced it: its
	// leadership ends with a leader epoch bump, and it leaves the ISR.
	step(recRegisterBroker, &registerBrokerRecord{BrokerID: 2, IncarnationID: "y2", Endpoints: ep}, nil)
	if p, _ := img.Partition("t", 0); p.Leader != 1 || p.LeaderEpoch != 2 || !reflect.DeepEqual(p.ISR, []int32{1}) {
		t.Fatalf("after broker 2 re-registered: %+v", p)
	}
	if img.Brokers[2].Fenced {
		t.Fatal("the new incarnation is fenced")
	}

	step(recConfigChange, &configChangeRecord{TopicID: id, Set: map[string]string{"cleanup.policy": "compact"}, Remove: []string{"retention.ms"}}, nil)
	if !reflect.DeepEqual(img.Topics["t"].Configs, map[string]string{"cleanup.policy": "compact"}) {
		t.Fatalf("configs %v", img.Topics["t"].Configs)
	}
	step(recConfigChange, &configChangeRecord{TopicID: [16]byte{7}}, ErrUnknownTopic)
	step(recConfigChange, &configChangeRecord{Cluster: true, Set: map[string]string{"log.retention.ms": "1000", "compression.type": "zstd"}}, nil)
	step(recConfigChange, &configChangeRecord{Cluster: true, Remove: []string{"compression.type"}}, nil)
	if !reflect.DeepEqual(img.ClusterConfigs, map[string]string{"log.retention.ms": "1000"}) {
		t.Fatalf("cluster configs %v", img.ClusterConfigs)
	}
	if restored, err := readSnapshot(bytes.NewReader(snapshotBytes(t, img))); err != nil || !reflect.DeepEqual(restored.ClusterConfigs, img.ClusterConfigs) {
		t.Fatalf("cluster configs through a snapshot: %v %v", err, restored)
	}

	if got := step(recProducerIDBlock, &producerIDBlockRecord{BrokerID: 1, FirstProducerID: 0, Count: 1000}, nil); got != int64(0) {
		t.Fatalf("producer id block result %v", got)
	}
	step(recProducerIDBlock, &producerIDBlockRecord{BrokerID: 2, FirstProducerID: 0, Count: 1000}, errStaleProducerIDBlock)
	step(recProducerIDBlock, &producerIDBlockRecord{BrokerID: 2, FirstProducerID: 1000, Count: 1000}, nil)
	if img.NextProducerID != 2000 {
		t.Fatalf("next producer id %d", img.NextProducerID)
	}

	step(recSetClusterID, &setClusterIDRecord{ClusterID: "abc"}, nil)
	step(recSetClusterID, &setClusterIDRecord{ClusterID: "abc"}, nil)
	step(recSetClusterID, &setClusterIDRecord{ClusterID: "def"}, ErrClusterIDSet)

	step(recDeleteTopic, &deleteTopicRecord{TopicID: id}, nil)
	step(recDeleteTopic, &deleteTopicRecord{TopicID: id}, ErrUnknownTopic)
	if len(img.Topics) != 0 {
		t.Fatal("topic not deleted")
	}
}

func TestFSMUnsupportedRecords(t *testing.T) {
	for _, data := range []string{
		`not json`,
		`{"type":99,"version":1,"payload":{}}`,
		`{"type":1,"version":2,"payload":{}}`,
		`{"type":1,"version":0,"payload":{}}`,
		`{"type":4,"version":1,"payload":[]}`,
	} {
		img, res := applyEntry(emptyImage(), 1, []byte(data))
		if err, _ := res.(error); !errors.Is(err, ErrUnsupportedRecord) {
			t.Errorf("%s: got %v", data, res)
		}
		if img.Offset != 1 {
			t.Errorf("%s: offset %d", data, img.Offset)
		}
	}
}
