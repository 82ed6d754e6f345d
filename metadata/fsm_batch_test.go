package metadata

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/hashicorp/raft"
)

// TestApplyBatchEqualsApply: the generated logs (with rejected records
// among them, and configuration entries in between), applied in batches
// of random sizes, give the same results and the same image as applied
// one by one; and the image published before a batch is not changed by
// it, though the batch changes its topic maps in place.
func TestApplyBatchEqualsApply(t *testing.T) {
	for seed := range uint64(30) {
		log := genLog(t, seed, 300)
		one := newTestFSM()
		var want []any
		for i, data := range log {
			want = append(want, one.Apply(&raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: data}))
		}

		r := rand.New(rand.NewPCG(seed, 7))
		batched := newTestFSM()
		var got []any
		for i := 0; i < len(log); {
			n := min(1+r.IntN(64), len(log)-i)
			var logs []*raft.Log
			var commands []int // positions in logs of the commands
			for k := range n {
				if r.IntN(8) == 0 {
					logs = append(logs, &raft.Log{Index: uint64(i + k + 1), Type: raft.LogConfiguration})
				}
				commands = append(commands, len(logs))
				logs = append(logs, &raft.Log{Index: uint64(i + k + 1), Type: raft.LogCommand, Data: log[i+k]})
			}
			before := batched.image()
			beforeBytes := snapshotBytes(t, before)
			res := batched.ApplyBatch(logs)
			if len(res) != len(logs) {
				t.Fatalf("seed %d: %d results for %d entries", seed, len(res), len(logs))
			}
			for _, c := range commands {
				got = append(got, res[c])
			}
			if !bytes.Equal(snapshotBytes(t, before), beforeBytes) {
				t.Fatalf("seed %d: the batch at %d changed the image published before it", seed, i+1)
			}
			if err := checkIndexes(before); err != nil {
				t.Fatalf("seed %d: image before the batch at %d: %v", seed, i+1, err)
			}
			i += n
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("seed %d: results differ:\n batched %v\n one by one %v", seed, got, want)
		}
		checkImage(t, batched.image())
		if !sameImage(batched.image(), one.image()) {
			t.Fatalf("seed %d: batched image differs", seed)
		}
		if img := batched.image(); img.batch != nil || img.topicsOwner != nil {
			t.Fatalf("seed %d: published image still marked as in a batch", seed)
		}
	}
}

// TestApplyBatchChangesOneTopicInPlace: a batch of ISR shrinks and
// expands of the partitions of one topic, with a config change of that
// topic and a stale record among them, changes the batch's own copy of
// the topic in place: same image and results as one by one, and the
// topic of the image before the batch untouched.
func TestApplyBatchChangesOneTopicInPlace(t *testing.T) {
	base := scaleImage(t, 3, 1_000, fewTopics) // 10 topics of 100 partitions
	id := scaleTopicID(0)
	model := base
	var logs []*raft.Log
	add := func(typ recordType, payload any) {
		l := &raft.Log{Index: model.Offset + 1, Type: raft.LogCommand, Data: mustEncode(t, typ, payload)}
		logs = append(logs, l)
		model, _ = applyEntry(model, l.Index, l.Data)
	}
	for k := range 40 {
		p := model.TopicsByID[id].Partitions[k%7]
		isr := []int32{p.Leader}
		if len(p.ISR) == 1 {
			isr = slices.Clone(p.Replicas)
		}
		add(recPartitionChange, &partitionChangeRecord{TopicID: id, Partition: p.ID, Leader: p.Leader, ISR: isr,
			LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch + int32(k/39)}) // the last one stale
		if k == 20 {
			add(recConfigChange, &configChangeRecord{TopicID: id, Set: map[string]string{"retention.ms": "1"}})
		}
	}
	var want []any
	one := base
	for _, l := range logs {
		var res any
		one, res = applyEntry(one, l.Index, l.Data)
		want = append(want, res)
	}
	beforeBytes := snapshotBytes(t, base)
	got, res := applyBatch(base, logs)
	if fmt.Sprint(res) != fmt.Sprint(want) {
		t.Fatalf("results differ:\n batch %v\n one by one %v", res, want)
	}
	if _, stale := res[len(res)-1].(error); !stale {
		t.Fatalf("the stale record was applied: %v", res[len(res)-1])
	}
	if !sameImage(got, one) {
		t.Fatal("batched image differs")
	}
	if !bytes.Equal(snapshotBytes(t, base), beforeBytes) {
		t.Fatal("the batch changed the image before it")
	}
}
