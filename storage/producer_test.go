package storage

import (
	"errors"
	"math"
	"testing"
)

func TestIdempotence(t *testing.T) {
	const pid = 42
	tests := []struct {
		name    string
		next    spec
		wantErr error
		dupOf   int // index of the earlier batch (0..5) it duplicates, or -1
	}{
		{"dup of oldest cached", idem(pid, 1, 2, 2), nil, 1},
		{"dup of 2nd", idem(pid, 1, 4, 2), nil, 2},
		{"dup of 3rd", idem(pid, 1, 6, 2), nil, 3},
		{"dup of 4th", idem(pid, 1, 8, 2), nil, 4},
		{"dup of latest", idem(pid, 1, 10, 2), nil, 5},
		{"evicted first batch is out of order", idem(pid, 1, 0, 2), ErrOutOfOrderSequence, -1},
		{"gap", idem(pid, 1, 13, 1), ErrOutOfOrderSequence, -1},
		{"next in order", idem(pid, 1, 12, 3), nil, -1},
		{"stale epoch", idem(pid, 0, 12, 1), ErrInvalidProducerEpoch, -1},
		{"new epoch seq 0", idem(pid, 2, 0, 1), nil, -1},
		{"new epoch seq not 0", idem(pid, 2, 5, 1), ErrOutOfOrderSequence, -1},
		{"unknown producer seq not 0", idem(pid+1, 0, 3, 1), ErrOutOfOrderSequence, -1},
		{"no producer id", plain(2), nil, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, l := openTestManager(t, OSFS{}, t.TempDir(), DefaultLogConfig())
			var first []AppendResult
			for i := 0; i < 6; i++ { // seqs 0-1, 2-3, ..., 10-11 at epoch 1
				first = append(first, mustAppend(t, l, idem(pid, 1, int32(2*i), 2)))
			}
			leo := l.LogEndOffset()
			res, err := l.AppendAsLeader(makeBatch(tc.next), AppendOptions{LogAppendTimeMs: -1})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			switch {
			case err != nil:
				if l.LogEndOffset() != leo {
					t.Fatal("refused batch moved the LEO")
				}
			case tc.dupOf >= 0:
				want := first[tc.dupOf]
				if !res.Duplicate || res.FirstOffset != want.FirstOffset || res.LastOffset != want.LastOffset || l.LogEndOffset() != leo {
					t.Fatalf("got %+v, want duplicate of %+v", res, want)
				}
			default:
				if res.Duplicate || res.FirstOffset != leo {
					t.Fatalf("got %+v, want a fresh append at %d", res, leo)
				}
			}
		})
	}
}

func TestSequenceWrap(t *testing.T) {
	_, l := openTestManager(t, OSFS{}, t.TempDir(), DefaultLogConfig())
	mustAppend(t, l, idem(7, 0, 0, 1))
	// Kafka wraps sequences past MaxInt32 to 0; fake the state near the top.
	l.mu.producers[7].Batches[0].LastSeq = math.MaxInt32 - 2
	mustAppend(t, l, idem(7, 0, math.MaxInt32-1, 3)) // MaxInt32-1, MaxInt32, 0
	if _, seq, _ := l.ProducerState(7); seq != 0 {
		t.Fatalf("last seq %d after wrap, want 0", seq)
	}
	mustAppend(t, l, idem(7, 0, 1, 1))
	res, err := l.AppendAsLeader(makeBatch(idem(7, 0, math.MaxInt32-1, 3)), AppendOptions{LogAppendTimeMs: -1})
	if err != nil || !res.Duplicate {
		t.Fatalf("retry of the wrapping batch: %+v %v", res, err)
	}
}

func TestProducerStateSurvivesRestart(t *testing.T) {
	for _, mode := range []string{"clean", "crash", "clean without snapshot"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			cfg := smallConfig()
			m, l := openTestManager(t, OSFS{}, dir, cfg)
			var results []AppendResult
			for i := 0; i < 40; i++ {
				results = append(results, mustAppend(t, l, idem(9, 3, int32(2*i), 2)))
				mustAppend(t, l, plain(1))
			}
			switch mode {
			case "clean":
				m.Close()
			case "clean without snapshot":
				m.Close()
				removeGlob(t, l.Dir(), "*.snapshot")
			}
			_, l = openTestManager(t, OSFS{}, dir, cfg)
			epoch, seq, ok := l.ProducerState(9)
			if !ok || epoch != 3 || seq != 79 {
				t.Fatalf("state %d %d %v", epoch, seq, ok)
			}
			res, err := l.AppendAsLeader(makeBatch(idem(9, 3, 76, 2)), AppendOptions{LogAppendTimeMs: -1})
			if err != nil || !res.Duplicate || res.FirstOffset != results[38].FirstOffset {
				t.Fatalf("duplicate after restart: %+v %v", res, err)
			}
			if _, err := l.AppendAsLeader(makeBatch(idem(9, 3, 81, 1)), AppendOptions{LogAppendTimeMs: -1}); !errors.Is(err, ErrOutOfOrderSequence) {
				t.Fatalf("gap after restart: %v", err)
			}
			mustAppend(t, l, idem(9, 3, 80, 1))
		})
	}
}
