package share

import (
	"errors"
	"reflect"
	"testing"
)

func TestStateRecordRoundTrip(t *testing.T) {
	k := StateKey{Group: "orders-workers", TopicID: [16]byte{1, 2, 3}, Partition: 7}
	got, err := DecodeKey(EncodeKey(k))
	if err != nil || got != k {
		t.Fatalf("key %+v %v, want %+v", got, err, k)
	}
	s := Snapshot{StateEpoch: 2, StartOffset: 100, Batches: []StateBatch{
		{100, 104, Available, 1}, {105, 105, Acknowledged, 3}, {106, 120, Archived, 5},
	}}
	back, epoch, err := DecodeSnapshot(EncodeSnapshot(s, 9))
	if err != nil || epoch != 9 || !reflect.DeepEqual(back, s) {
		t.Fatalf("snapshot %+v epoch %d %v, want %+v", back, epoch, err, s)
	}
	empty := Snapshot{StartOffset: 5, Batches: []StateBatch{}}
	if back, _, err := DecodeSnapshot(EncodeSnapshot(empty, 0)); err != nil || !reflect.DeepEqual(back, empty) {
		t.Fatalf("empty snapshot %+v %v", back, err)
	}
}

func TestStateRecordRefused(t *testing.T) {
	good := EncodeSnapshot(Snapshot{StartOffset: 1, Batches: []StateBatch{{1, 2, Available, 1}}}, 0)
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"newer version", append([]byte{0, 1}, good[2:]...)},
		{"truncated", good[:len(good)-3]},
		{"trailing bytes", append(append([]byte{}, good...), 0)},
		{"huge batch count", append(append([]byte{}, good[:18]...), 0xff, 0xff, 0xff, 0x7f)},
	} {
		if _, _, err := DecodeSnapshot(tc.b); !errors.Is(err, ErrUnknownRecord) {
			t.Errorf("%s: %v, want ErrUnknownRecord", tc.name, err)
		}
	}
	if _, err := DecodeKey([]byte{0, 1, 1}); !errors.Is(err, ErrUnknownRecord) {
		t.Errorf("key of another type: %v", err)
	}
}

// FuzzDecodeSnapshot: whatever the bytes, decoding either fails with
// ErrUnknownRecord or yields a snapshot that encodes back to them, and
// Restore either refuses it or rebuilds a partition whose own snapshot
// restores the same.
func FuzzDecodeSnapshot(f *testing.F) {
	f.Add(EncodeSnapshot(Snapshot{StateEpoch: 1, StartOffset: 10, Batches: []StateBatch{{10, 12, Available, 2}, {13, 13, Archived, 5}}}, 3))
	f.Add(EncodeSnapshot(Snapshot{}, 0))
	f.Add(EncodeKey(StateKey{Group: "g", Partition: 1}))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := DecodeKey(b); err != nil && !errors.Is(err, ErrUnknownRecord) {
			t.Fatalf("key error %v does not wrap ErrUnknownRecord", err)
		}
		s, epoch, err := DecodeSnapshot(b)
		if err != nil {
			if !errors.Is(err, ErrUnknownRecord) {
				t.Fatalf("error %v does not wrap ErrUnknownRecord", err)
			}
			return
		}
		if again, e2, err := DecodeSnapshot(EncodeSnapshot(s, epoch)); err != nil || e2 != epoch || !reflect.DeepEqual(again, s) {
			t.Fatalf("re-encoded snapshot decodes as %+v %v", again, err)
		}
		p, err := Restore(DefaultConfig(), s)
		if err != nil {
			return
		}
		if _, err := Restore(DefaultConfig(), p.Snapshot()); err != nil {
			t.Fatalf("a restored partition's snapshot is refused: %v", err)
		}
	})
}
