package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/kafkatest"
	"github.com/kbroker/kbroker/wire/record"
)

// fetchBatches reads partition 0 of topic raw from offset 0.
func fetchBatches(t *testing.T, addr, topic string) []record.Batch {
	t.Helper()
	c := kafkatest.Dial(t, addr)
	req := fetchRequest(topic, 0, 0, 0)
	req.MaxBytes = 64 << 20
	req.Topics[0].Partitions[0].PartitionMaxBytes = 64 << 20
	resp := c.RoundTrip(req).(*kmsg.FetchResponse)
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("fetch %s: error %d", topic, p.ErrorCode)
	}
	var out []record.Batch
	for rest := p.RecordBatches; len(rest) > 0; {
		b, r, err := record.Parse(rest)
		if err != nil {
			t.Fatal(err)
		}
		out, rest = append(out, b), r
	}
	return out
}

// jsonRecords is the reference text's workload: 2000 JSON-like values.
func jsonRecords(topic string) []*kgo.Record {
	recs := make([]*kgo.Record, 2000)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("user-%d", i%50)),
			Value: []byte(fmt.Sprintf(`{"id":%d,"user":"user-%d","action":"click","page":"/products/%d","ts":%d}`, i, i%50, i%200, 1700000000000+int64(i)))}
	}
	return recs
}

func produceSync(t *testing.T, addr string, recs []*kgo.Record, opts ...kgo.Opt) {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.ProducerLinger(50 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// Each codec a producer uses is stored as sent when the topic says
// "producer"; a topic with its own compression.type gets it.
func TestCompressionTypes(t *testing.T) {
	node := startNode(t, "")
	codecs := []struct {
		name  string
		codec kgo.CompressionCodec
		want  record.Codec
	}{
		{"none", kgo.NoCompression(), record.CodecNone},
		{"gzip", kgo.GzipCompression(), record.CodecGzip},
		{"snappy", kgo.SnappyCompression(), record.CodecSnappy},
		{"lz4", kgo.Lz4Compression(), record.CodecLZ4},
		{"zstd", kgo.ZstdCompression(), record.CodecZstd},
	}
	for _, c := range codecs {
		t.Run("producer-"+c.name, func(t *testing.T) {
			topic := "codec-" + c.name
			createTopic(t, node.addr, topic, 1, nil)
			produceSync(t, node.addr, jsonRecords(topic), kgo.ProducerBatchCompression(c.codec))
			checkStored(t, node.addr, topic, c.want, 2000)
		})
	}
	t.Run("gzip-to-lz4-topic", func(t *testing.T) {
		createTopic(t, node.addr, "to-lz4", 1, map[string]*string{"compression.type": ptr("lz4")})
		produceSync(t, node.addr, jsonRecords("to-lz4"), kgo.ProducerBatchCompression(kgo.GzipCompression()))
		checkStored(t, node.addr, "to-lz4", record.CodecLZ4, 2000)
	})
	t.Run("uncompressed-to-zstd-topic", func(t *testing.T) {
		createTopic(t, node.addr, "to-zstd", 1, map[string]*string{"compression.type": ptr("zstd")})
		produceSync(t, node.addr, jsonRecords("to-zstd"), kgo.ProducerBatchCompression(kgo.NoCompression()))
		checkStored(t, node.addr, "to-zstd", record.CodecZstd, 2000)
	})
}

func checkStored(t *testing.T, addr, topic string, want record.Codec, n int) {
	t.Helper()
	batches := fetchBatches(t, addr, topic)
	next := int64(0)
	for _, b := range batches {
		if b.Codec() != want {
			t.Fatalf("batch at %d stored as %v, want %v", b.BaseOffset(), b.Codec(), want)
		}
		if !b.ValidCRC() || b.BaseOffset() != next {
			t.Fatalf("batch at %d: valid CRC %v, expected base offset %d", b.BaseOffset(), b.ValidCRC(), next)
		}
		next = b.LastOffset() + 1
	}
	if next != int64(n) {
		t.Fatalf("stored %d records, want %d", next, n)
	}
	got := consumeAll(t, addr, topic, n)
	sent := jsonRecords(topic)
	for off := range int64(n) {
		if v := got[tpo{0, off}]; v != string(sent[off].Value) {
			t.Fatalf("offset %d holds %q", off, v)
		}
	}
}

// message.timestamp.type=LogAppendTime stamps the broker's clock on the
// batch and returns it in the produce response.
func TestLogAppendTime(t *testing.T) {
	node := startNode(t, "")
	createTopic(t, node.addr, "lat", 1, map[string]*string{"message.timestamp.type": ptr("LogAppendTime")})
	c := kafkatest.Dial(t, node.addr)
	before := time.Now().UnixMilli()
	resp := c.RoundTrip(kafkatest.ProduceRequest(9, 1, "lat", map[int32][]byte{0: testBatch(t, 2, -1, -1, -1)})).(*kmsg.ProduceResponse)
	after := time.Now().UnixMilli()
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.LogAppendTime < before || p.LogAppendTime > after {
		t.Fatalf("error %d LogAppendTime %d, want within [%d, %d]", p.ErrorCode, p.LogAppendTime, before, after)
	}
	b := fetchBatches(t, node.addr, "lat")[0]
	if !b.LogAppendTime() || b.MaxTimestamp() != p.LogAppendTime || !b.ValidCRC() {
		t.Fatalf("stored batch: LogAppendTime flag %v maxTimestamp %d valid CRC %v", b.LogAppendTime(), b.MaxTimestamp(), b.ValidCRC())
	}
}
