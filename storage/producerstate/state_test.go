package producerstate

import (
	"encoding/binary"
	"hash/crc32"
	"reflect"
	"testing"
)

func TestSnapshotRoundTrip(t *testing.T) {
	m := State{
		1: {Epoch: 3, CoordinatorEpoch: 7, CurrentTxnFirstOffset: 42,
			Batches: []BatchMetadata{{FirstSeq: 0, LastSeq: 4, FirstOffset: 42, LastOffset: 46, MaxTimestamp: 9}}},
		2: {Epoch: 0, CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1},
		3: {Epoch: 1, CoordinatorEpoch: 2, CurrentTxnFirstOffset: -1},
	}
	got, err := DecodeSnapshot(m.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, m) {
		t.Fatalf("round trip:\n%+v\nwant\n%+v", got, m)
	}
	if tr := NewTxnTracker(got); !reflect.DeepEqual(tr.ongoing, []TxnRange{{1, 42, -1}}) {
		t.Fatalf("ongoing from snapshot: %+v", tr.ongoing)
	}
	// A version 1 snapshot (before transactions) still loads.
	v1 := []byte("KBPS\x00\x01\x00\x00\x00\x00")
	v1 = binary.BigEndian.AppendUint32(v1, 1)
	v1 = binary.BigEndian.AppendUint64(v1, 9)
	v1 = binary.BigEndian.AppendUint16(v1, 2)
	v1 = append(v1, 0)
	binary.BigEndian.PutUint32(v1[6:], crc32.Checksum(v1[snapshotHeader:], castagnoli))
	old, err := DecodeSnapshot(v1)
	if err != nil || !reflect.DeepEqual(old, State{9: NewEntry(2)}) {
		t.Fatalf("v1 snapshot: %+v, %v", old, err)
	}
}
