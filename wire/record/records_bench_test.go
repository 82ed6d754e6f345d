package record

import (
	"fmt"
	"testing"
)

// benchBatch is a batch of 100 JSON-ish records of about 200 bytes each,
// typical of what producers send.
func benchRecords() []Record {
	recs := make([]Record, 100)
	for i := range recs {
		recs[i] = Record{
			OffsetDelta:    int32(i),
			TimestampDelta: int64(i),
			Key:            fmt.Appendf(nil, "user-%06d", i),
			Value:          fmt.Appendf(nil, `{"id":%d,"name":"user %d","email":"user%d@example.com","active":true,"score":%d,"tags":["a","b","c"],"note":"lorem ipsum dolor sit amet"}`, i, i, i, i*37),
			Headers:        []Header{{Key: "trace-id", Value: fmt.Appendf(nil, "%016x", i)}},
		}
	}
	return recs
}

func BenchmarkIterate(b *testing.B) {
	recs := benchRecords()
	var raw int
	for i := range recs {
		raw += len(AppendRecord(nil, &recs[i]))
	}
	for _, codec := range allCodecs {
		batch, err := Build(BatchSpec{Attributes: int16(codec)}, recs)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(codec.String(), func(b *testing.B) {
			// Bytes are the uncompressed records, so codecs compare on
			// the same work.
			b.SetBytes(int64(raw))
			b.ReportAllocs()
			for b.Loop() {
				n := 0
				if err := Iterate(batch, 1<<20, func(*Record) error { n++; return nil }); err != nil || n != len(recs) {
					b.Fatal(err, n)
				}
			}
		})
	}
}

func BenchmarkBuild(b *testing.B) {
	recs := benchRecords()
	for _, codec := range allCodecs {
		b.Run(codec.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Build(BatchSpec{Attributes: int16(codec)}, recs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
