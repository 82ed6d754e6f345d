package metadata

import (
	"slices"
	"testing"
)

// One fence record (a session timeout, or a memberlist death report
// confirmed by DeadReportGrace) takes the broker out of every ISR it was
// in and moves every leadership it held, in the same controller step
// (KRaft does the same): acks=all on partitions it follows stops waiting
// for it at once, not after the leaders' replica.lag.time.max.ms.
func TestFSMFenceLeavesEveryISR(t *testing.T) {
	img := emptyImage()
	var index uint64
	step := func(typ recordType, payload any) {
		t.Helper()
		index++
		var res any
		img, res = applyEntry(img, index, mustEncode(t, typ, payload))
		if err, ok := res.(error); ok {
			t.Fatalf("%v at %d: %v", typ, index, err)
		}
		checkImage(t, img)
	}
	ep := []Endpoint{{Listener: "PLAINTEXT", Host: "localhost", Port: 9092, SecurityProtocol: "PLAINTEXT"}}
	for id := int32(1); id <= 3; id++ {
		step(recRegisterBroker, &registerBrokerRecord{BrokerID: id, IncarnationID: string(rune('a' + id)), Endpoints: ep})
	}
	parts := []partitionRecord{
		{Partition: 0, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1}, // follower
		{Partition: 1, Replicas: []int32{2, 3, 1}, ISR: []int32{2, 3, 1}, Leader: 2}, // follower
		{Partition: 2, Replicas: []int32{3, 1, 2}, ISR: []int32{3, 1, 2}, Leader: 3}, // leader
		{Partition: 3, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1},       // not a replica
		{Partition: 4, Replicas: []int32{1, 3}, ISR: []int32{1}, Leader: 1},          // out of the ISR already
	}
	step(recCreateTopic, &createTopicRecord{Name: "t", TopicID: [16]byte{7}, Partitions: parts})
	before := img.Topics["t"]

	step(recFenceBroker, &fenceBrokerRecord{BrokerID: 3, BrokerEpoch: img.Brokers[3].Epoch})

	after := img.Topics["t"]
	wantLeader := []int32{1, 2, 1, 1, 1}
	for i, p := range after.Partitions {
		if slices.Contains(p.ISR, 3) {
			t.Errorf("partition %d: fenced broker 3 still in ISR %v", i, p.ISR)
		}
		if p.Leader != wantLeader[i] {
			t.Errorf("partition %d: leader %d, want %d", i, p.Leader, wantLeader[i])
		}
		touched := slices.Contains(parts[i].ISR, 3)
		if changed := p != before.Partitions[i]; changed != touched {
			t.Errorf("partition %d changed=%v, want %v (only partitions whose ISR held 3 change)", i, changed, touched)
		}
		if touched && p.PartitionEpoch != before.Partitions[i].PartitionEpoch+1 {
			t.Errorf("partition %d: partition epoch %d, want %d", i, p.PartitionEpoch, before.Partitions[i].PartitionEpoch+1)
		}
	}
}
