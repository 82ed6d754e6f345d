package record

import (
	"bytes"
	"errors"
	"testing"
)

func TestIterateCompacted(t *testing.T) {
	gappy := func(deltas ...int32) []Record {
		var rs []Record
		for i, d := range deltas {
			rs = append(rs, Record{OffsetDelta: d, TimestampDelta: int64(d), Key: []byte{byte('a' + i)}, Value: bytes.Repeat([]byte{'v'}, i)})
		}
		return rs
	}
	tests := []struct {
		name     string
		records  []Record
		setLOD   int32 // if >= 0, overwrite lastOffsetDelta (CRC recomputed)
		wantErr  error
		wantLOD  int32
		strictOK bool
	}{
		{"contiguous", gappy(0, 1, 2, 3), -1, nil, 3, true},
		{"gaps", gappy(0, 3, 9, 10), -1, nil, 10, false},
		{"first delta not zero", gappy(5, 7), -1, nil, 7, false},
		{"single record", gappy(41), -1, nil, 41, false},
		{"decreasing", gappy(0, 4, 2), -1, ErrInvalid, 2, false},
		{"duplicate", gappy(0, 4, 4), -1, ErrInvalid, 4, false},
		{"negative", gappy(-1, 4), -1, ErrInvalid, 4, false},
		{"lastOffsetDelta past the last record", gappy(0, 4), 9, ErrInvalid, 9, false},
		{"lastOffsetDelta before the last record", gappy(0, 4), 3, ErrInvalid, 3, false},
	}
	for _, codec := range allCodecs {
		for _, tc := range tests {
			t.Run(codec.String()+"/"+tc.name, func(t *testing.T) {
				b, err := Build(BatchSpec{BaseOffset: 100, Attributes: int16(codec), BaseTimestamp: 1000,
					ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, tc.records)
				if err != nil {
					t.Fatal(err)
				}
				if tc.setLOD >= 0 {
					b[lastOffsetDeltaOffset] = 0
					b[lastOffsetDeltaOffset+1] = 0
					b[lastOffsetDeltaOffset+2] = 0
					b[lastOffsetDeltaOffset+3] = byte(tc.setLOD)
					b.SetCRC()
				}
				if b.LastOffsetDelta() != tc.wantLOD {
					t.Fatalf("lastOffsetDelta %d, want %d", b.LastOffsetDelta(), tc.wantLOD)
				}
				var got []int32
				err = IterateCompacted(b, 1<<20, func(r *Record) error {
					got = append(got, r.OffsetDelta)
					return nil
				})
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("IterateCompacted: %v, want %v", err, tc.wantErr)
				}
				if err == nil {
					if len(got) != len(tc.records) || b.LastOffset() != 100+int64(got[len(got)-1]) {
						t.Fatalf("deltas %v, last offset %d", got, b.LastOffset())
					}
					if want := int64(1000 + got[len(got)-1]); b.MaxTimestamp() != want {
						t.Fatalf("maxTimestamp %d, want %d", b.MaxTimestamp(), want)
					}
				}
				if strictErr := Validate(b, 1<<20); (strictErr == nil) != tc.strictOK {
					t.Fatalf("Iterate: %v, want ok=%v", strictErr, tc.strictOK)
				}
			})
		}
	}
}

func TestIterateCompactedRejectsWhatIterateRejects(t *testing.T) {
	b, err := Build(BatchSpec{BaseOffset: 0}, sampleRecords())
	if err != nil {
		t.Fatal(err)
	}
	for _, cut := range []int{1, 5, len(b) - HeaderSize - 1} {
		short := Batch(bytes.Clone(b[:len(b)-cut]))
		short[batchLengthOffset+3] -= byte(cut) // keep batchLength consistent when it is small
		if IterateCompacted(short, 1<<20, func(*Record) error { return nil }) == nil {
			t.Errorf("cut %d: accepted", cut)
		}
	}
	if err := ValidateCompacted(b[:HeaderSize-1], 1<<20); !errors.Is(err, ErrCorrupt) {
		t.Errorf("short header: %v", err)
	}
}
