package sharecoord

import (
	"reflect"
	"testing"

	"github.com/kbroker/kbroker/cluster/share"
)

// sb is a state batch.
func sb(first, last int64, st share.RecordState, count int32) share.StateBatch {
	return share.StateBatch{First: first, Last: last, State: st, DeliveryCount: count}
}

func TestMerge(t *testing.T) {
	A, K, X := share.Available, share.Acknowledged, share.Archived
	for _, tc := range []struct {
		name     string
		cur, w   share.Snapshot
		wantSt   int64
		wantBats []share.StateBatch
	}{
		{"replace overlapped",
			share.Snapshot{StartOffset: 0, Batches: []share.StateBatch{sb(0, 9, A, 1)}},
			share.Snapshot{StartOffset: 0, Batches: []share.StateBatch{sb(3, 4, K, 1)}},
			0, []share.StateBatch{sb(0, 2, A, 1), sb(3, 4, K, 1), sb(5, 9, A, 1)}},
		{"start offset drops below",
			share.Snapshot{StartOffset: 0, Batches: []share.StateBatch{sb(0, 4, A, 2), sb(5, 6, X, 5)}},
			share.Snapshot{StartOffset: 3, Batches: []share.StateBatch{sb(6, 6, A, 1)}},
			3, []share.StateBatch{sb(3, 4, A, 2), sb(5, 5, X, 5), sb(6, 6, A, 1)}},
		{"full state",
			share.Snapshot{StartOffset: 0, Batches: []share.StateBatch{sb(0, 4, A, 1)}},
			share.Snapshot{StartOffset: 5, Batches: []share.StateBatch{}},
			5, []share.StateBatch{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Merge(tc.cur, tc.w)
			if got.StartOffset != tc.wantSt || !reflect.DeepEqual(got.Batches, tc.wantBats) {
				t.Fatalf("merged %+v, want start %d batches %+v", got, tc.wantSt, tc.wantBats)
			}
		})
	}
}

func TestStateKeyString(t *testing.T) {
	k := share.StateKey{Group: "g:1", TopicID: [16]byte{0xfb}, Partition: 7}
	// Kafka prints a Uuid as URL-safe base64 without padding.
	if got, want := StateKeyString(k), "g:1:-wAAAAAAAAAAAAAAAAAAAA:7"; got != want {
		t.Fatalf("key %q, want %q", got, want)
	}
}
