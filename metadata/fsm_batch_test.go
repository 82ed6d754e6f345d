package metadata

import (
	"bytes"
	"fmt"
	"math/rand/v2"
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
