package record

import (
	"bytes"
	"errors"
	"testing"
)

func TestEndTxnMarkerRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		m             EndTxnMarker
		logAppendTime bool
	}{
		{EndTxnMarker{Type: ControlCommit, CoordinatorEpoch: 7}, false},
		{EndTxnMarker{Type: ControlAbort, CoordinatorEpoch: 0}, true},
	} {
		b, err := BuildEndTxnMarker(MarkerSpec{BaseOffset: 42, PartitionLeaderEpoch: 3, Timestamp: 1000,
			LogAppendTime: tc.logAppendTime, ProducerID: 9, ProducerEpoch: 2}, tc.m)
		if err != nil {
			t.Fatal(err)
		}
		if !b.IsControl() || !b.IsTransactional() || b.LogAppendTime() != tc.logAppendTime || b.Codec() != CodecNone ||
			b.BaseOffset() != 42 || b.ProducerID() != 9 || b.ProducerEpoch() != 2 || b.BaseSequence() != NoSequence ||
			b.RecordCount() != 1 || b.MaxTimestamp() != 1000 || !b.ValidCRC() {
			t.Fatalf("header of %+v wrong: attrs %x", tc.m, b.Attributes())
		}
		got, ok, err := ParseControl(b)
		if err != nil || !ok || got != tc.m {
			t.Fatalf("parsed %+v %v %v, want %+v", got, ok, err, tc.m)
		}
		// Kafka's layout: key = version 0, type; value = version 0, coordinator epoch.
		var key, value []byte
		if err := Iterate(b, 1<<10, func(r *Record) error {
			key, value = bytes.Clone(r.Key), bytes.Clone(r.Value)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		wantKey := []byte{0, 0, 0, byte(tc.m.Type)}
		wantValue := []byte{0, 0, 0, 0, 0, byte(tc.m.CoordinatorEpoch)}
		if !bytes.Equal(key, wantKey) || !bytes.Equal(value, wantValue) {
			t.Fatalf("key %x value %x, want %x %x", key, value, wantKey, wantValue)
		}
	}
}

func TestParseControlRefuses(t *testing.T) {
	data, err := Build(BatchSpec{ProducerID: 1, BaseSequence: NoSequence}, []Record{{Key: []byte("k")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ParseControl(data); !errors.Is(err, ErrInvalid) {
		t.Fatalf("data batch: %v", err)
	}
	short, err := Build(BatchSpec{Attributes: ControlFlag | TransactionalFlag, ProducerID: 1, BaseSequence: NoSequence},
		[]Record{{Key: []byte{0, 0, 0, 1}, Value: []byte{0}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ParseControl(short); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("short marker value: %v", err)
	}
}
