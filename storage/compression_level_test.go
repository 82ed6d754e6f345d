package storage

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kbroker/kbroker/wire/record"
)

// compression.gzip.level, compression.lz4.level and compression.zstd.level reach the broker's
// recompression: the same batch stored at a higher level is smaller, and
// reads back the same.
func TestCompressionLevels(t *testing.T) {
	words := strings.Fields("kafka broker partition segment offset leader replica follower watermark epoch cleaner key value record batch")
	rng := rand.New(rand.NewPCG(1, 2))
	var recs []kv
	for i := range 200 {
		var b strings.Builder
		for range 60 {
			b.WriteString(words[rng.IntN(len(words))])
			b.WriteByte(' ')
		}
		recs = append(recs, k(fmt.Sprint("key-", i), b.String()))
	}
	tests := []struct {
		codec     string
		low, high int
		set       func(*LogConfig, int)
	}{
		{"gzip", 1, 9, func(c *LogConfig, l int) { c.CompressionGzipLevel = l }},
		{"zstd", -5, 19, func(c *LogConfig, l int) { c.CompressionZstdLevel = l }},
		// 9, Kafka's default, is the fast compressor; 17 LZ4 HC.
		{"lz4", 9, 17, func(c *LogConfig, l int) { c.CompressionLz4Level = l }},
	}
	for _, tc := range tests {
		t.Run(tc.codec, func(t *testing.T) {
			size := map[int]int{}
			for _, level := range []int{tc.low, tc.high} {
				cfg := DefaultLogConfig()
				cfg.CompressionType = tc.codec
				tc.set(&cfg, level)
				_, l := openTestManager(t, OSFS{}, t.TempDir(), cfg)
				appendKeyed(t, l, record.CodecNone, testNow, recs...)
				batches := readAll(t, l)
				if len(batches) != 1 || batches[0].Codec().String() != tc.codec {
					t.Fatalf("level %d: stored %d batches, codec %v", level, len(batches), batches[0].Codec())
				}
				size[level] = len(batches[0])
				got := records(t, l)
				if len(got) != len(recs) || got[7].value != string(recs[7].value) {
					t.Fatalf("level %d: read back %d records", level, len(got))
				}
			}
			if size[tc.high] >= size[tc.low] {
				t.Fatalf("level %d: %d bytes, level %d: %d bytes", tc.low, size[tc.low], tc.high, size[tc.high])
			}
		})
	}
}
