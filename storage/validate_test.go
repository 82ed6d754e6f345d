package storage

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/kbroker/kbroker/wire/record"
)

func batchOf(t *testing.T, codec record.Codec, base int64, deltas ...int64) record.Batch {
	t.Helper()
	recs := make([]record.Record, len(deltas))
	for i, d := range deltas {
		recs[i] = record.Record{OffsetDelta: int32(i), TimestampDelta: d,
			Key: []byte(fmt.Sprint("k", i)), Value: []byte(fmt.Sprint("v", i)),
			Headers: []record.Header{{Key: "h", Value: []byte("x")}}}
	}
	b, err := record.Build(record.BatchSpec{Attributes: int16(codec), BaseTimestamp: base,
		PartitionLeaderEpoch: -1, ProducerID: 7, ProducerEpoch: 1, BaseSequence: 3}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func topicConfig(mut func(*LogConfig)) *LogConfig {
	c := DefaultLogConfig()
	mut(&c)
	return &c
}

func TestValidateForAppend(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	nowMs := now.UnixMilli()
	cases := []struct {
		name      string
		batch     record.Batch
		cfg       func(*LogConfig)
		wantCodec record.Codec
		same      bool  // the very same bytes come back
		wantLAT   int64 // LogAppendTime, -1 for CreateTime
		wantErr   error
	}{
		{"producer codec kept", batchOf(t, record.CodecGzip, nowMs, 0, 1), func(c *LogConfig) {}, record.CodecGzip, true, -1, nil},
		{"same codec in place", batchOf(t, record.CodecZstd, nowMs, 0), func(c *LogConfig) { c.CompressionType = "zstd" }, record.CodecZstd, true, -1, nil},
		{"gzip to lz4 topic", batchOf(t, record.CodecGzip, nowMs, 0, 1, 2), func(c *LogConfig) { c.CompressionType = "lz4" }, record.CodecLZ4, false, -1, nil},
		{"uncompressed to zstd topic", batchOf(t, record.CodecNone, nowMs, 0, 1), func(c *LogConfig) { c.CompressionType = "zstd" }, record.CodecZstd, false, -1, nil},
		{"snappy to uncompressed topic", batchOf(t, record.CodecSnappy, nowMs, 0), func(c *LogConfig) { c.CompressionType = "uncompressed" }, record.CodecNone, false, -1, nil},
		{"LogAppendTime", batchOf(t, record.CodecNone, 5, 0), func(c *LogConfig) { c.MessageTimestampType = "LogAppendTime" }, record.CodecNone, true, nowMs, nil},
		{"too old", batchOf(t, record.CodecNone, nowMs-10_000, 0), func(c *LogConfig) { c.MessageTimestampBeforeMaxMs = 5_000 }, 0, false, 0, ErrInvalidTimestamp},
		{"too new", batchOf(t, record.CodecNone, nowMs, 0, 7_200_000), func(c *LogConfig) {}, 0, false, 0, ErrInvalidTimestamp},
		{"extreme timestamp", batchOf(t, record.CodecNone, math.MinInt64+1, 0), func(c *LogConfig) { c.MessageTimestampBeforeMaxMs = math.MaxInt64 - 1 }, 0, false, 0, ErrInvalidTimestamp},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, lat, err := validateForAppend(c.batch, topicConfig(c.cfg), now)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("err %v, want %v", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Codec() != c.wantCodec || lat != c.wantLAT {
				t.Fatalf("codec %v LogAppendTime %d, want %v and %d", got.Codec(), lat, c.wantCodec, c.wantLAT)
			}
			if same := &got[0] == &c.batch[0]; same != c.same {
				t.Fatalf("batch reused = %v, want %v", same, c.same)
			}
			if !got.ValidCRC() {
				t.Fatal("result has an invalid CRC")
			}
			// Whatever happened, the records and producer fields survive.
			if got.ProducerID() != 7 || got.ProducerEpoch() != 1 || got.BaseSequence() != 3 || got.RecordCount() != c.batch.RecordCount() {
				t.Fatal("producer fields or record count changed")
			}
			var keys []string
			if err := record.Iterate(got, 1<<20, func(r *record.Record) error {
				keys = append(keys, string(r.Key)+"="+string(r.Value)+"/"+r.Headers[0].Key)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			for i, k := range keys {
				if want := fmt.Sprintf("k%d=v%d/h", i, i); k != want {
					t.Fatalf("record %d is %q, want %q", i, k, want)
				}
			}
		})
	}
}
