package replication

import (
	"testing"
	"time"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/storage"
	"github.com/kbroker/kbroker/wire/record"
)

// A follower proposed for the ISR counts for the high watermark from the
// moment it is proposed (Kafka's maximal ISR): the controller may commit
// it and later elect it, so nothing it lacks may be acknowledged.
func TestHighWatermarkCountsProposedISRMembers(t *testing.T) {
	log, err := storage.OpenLog(t.TempDir(), storage.DefaultLogConfig(), storage.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	c := config.Default()
	p := &Partition{TP: TopicPartition{"t", 0}, log: log, nodeID: 1, hooks: &hooks{}}
	p.mu.followerLEO = map[int32]int64{}
	p.mu.followers = map[int32]*followerState{}
	p.update(1, 0, 0, []int32{1, 2}, []int32{1}, c.TopicDefaults(), time.Now())

	appendOne := func() {
		t.Helper()
		b, err := record.Build(record.BatchSpec{BaseTimestamp: time.Now().UnixMilli(), PartitionLeaderEpoch: -1,
			ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, []record.Record{{Value: []byte("v")}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.AppendAsLeader(b, 1); err != nil {
			t.Fatal(err)
		}
	}
	appendOne()
	if hw := p.HighWatermark(); hw != 1 {
		t.Fatalf("sole ISR member: high watermark %d, want 1", hw)
	}
	// Follower 2 has fetched up to offset 1 and is proposed for the ISR.
	p.mu.Lock()
	p.mu.followerLEO[2] = 1
	p.mu.expanding = []int32{2}
	p.mu.Unlock()
	appendOne()
	appendOne()
	if hw := p.HighWatermark(); hw != 1 {
		t.Fatalf("with follower 2 proposed at LEO 1: high watermark %d, want 1", hw)
	}
	p.mu.Lock()
	p.mu.followerLEO[2] = 3
	p.mu.Unlock()
	p.maybeAdvanceHighWatermark()
	if hw := p.HighWatermark(); hw != 3 {
		t.Fatalf("follower 2 caught up: high watermark %d, want 3", hw)
	}
	// A new partition epoch from the image settles the question.
	p.update(1, 0, 1, []int32{1, 2}, []int32{1}, c.TopicDefaults(), time.Now())
	p.mu.RLock()
	pending := p.mu.expanding
	p.mu.RUnlock()
	if pending != nil {
		t.Fatalf("proposed members %v kept after a new partition epoch", pending)
	}
}
