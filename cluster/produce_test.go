package cluster

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/kafkatest"
	"github.com/kbroker/kbroker/wire/record"
)

// testBatch builds a client batch of n uncompressed records, as a
// producer would send it: baseOffset 0, partitionLeaderEpoch -1.
func testBatch(t testing.TB, n int, pid int64, epoch int16, seq int32) []byte {
	t.Helper()
	recs := make([]record.Record, n)
	for i := range recs {
		recs[i] = record.Record{
			OffsetDelta:    int32(i),
			TimestampDelta: int64(i),
			Key:            []byte(fmt.Sprintf("key-%d", i)),
			Value:          []byte(fmt.Sprintf("value-%d", i)),
		}
	}
	now := time.Now().UnixMilli()
	b, err := record.Build(record.BatchSpec{
		PartitionLeaderEpoch: -1,
		BaseTimestamp:        now,
		ProducerID:           pid,
		ProducerEpoch:        epoch,
		BaseSequence:         seq,
	}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func partitionErrors(resp *kmsg.ProduceResponse) []int16 {
	var out []int16
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out = append(out, p.ErrorCode)
		}
	}
	return out
}

// latestOffset asks ListOffsets for the high watermark.
func latestOffset(t testing.TB, c *kafkatest.Conn, topic string, partition int32) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = 4
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition = partition
	rp.CurrentLeaderEpoch = -1
	rp.Timestamp = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := c.RoundTrip(req).(*kmsg.ListOffsetsResponse)
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("list offsets: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	return p.Offset
}

// The requests of the reference text's "requests the broker refuses"
// example, and a few more, with the outcomes Kafka gives.
func TestProduceRefusals(t *testing.T) {
	node := startNode(t, "")
	createTopic(t, node.addr, "refuse", 2, map[string]*string{"max.message.bytes": ptr("2000")})

	withBaseOffset := func(b []byte, off int64) []byte {
		record.Batch(b).SetBaseOffset(off) // outside the CRC: still valid
		return b
	}
	withMagic := func(b []byte, m byte) []byte { b[16] = m; return b }
	withBadCRC := func(b []byte) []byte { b[len(b)-1] ^= 0xff; return b }
	ok := testBatch(t, 1, -1, -1, -1)

	cases := []struct {
		name  string
		acks  int16
		parts map[int32][]byte
		want  []int16
	}{
		{"acks=2", 2, map[int32][]byte{0: testBatch(t, 1, -1, -1, -1), 1: testBatch(t, 1, -1, -1, -1)},
			[]int16{kerr.InvalidRequiredAcks.Code, kerr.InvalidRequiredAcks.Code}},
		{"baseOffset=5", 1, map[int32][]byte{0: withBaseOffset(testBatch(t, 1, -1, -1, -1), 5)},
			[]int16{kerr.InvalidRecord.Code}},
		{"two batches", 1, map[int32][]byte{0: append(testBatch(t, 1, -1, -1, -1), testBatch(t, 1, -1, -1, -1)...)},
			[]int16{kerr.InvalidRecord.Code}},
		{"magic 1", 1, map[int32][]byte{0: withMagic(testBatch(t, 1, -1, -1, -1), 1)},
			[]int16{kerr.InvalidRecord.Code}},
		{"bad crc", -1, map[int32][]byte{0: withBadCRC(testBatch(t, 1, -1, -1, -1))},
			[]int16{kerr.CorruptMessage.Code}},
		{"oversize", -1, map[int32][]byte{0: testBatch(t, 100, -1, -1, -1)},
			[]int16{kerr.MessageTooLarge.Code}},
		{"one bad partition", 1, map[int32][]byte{0: withBadCRC(testBatch(t, 1, -1, -1, -1)), 1: ok},
			[]int16{kerr.CorruptMessage.Code, 0}},
	}
	c := kafkatest.Dial(t, node.addr)
	written := int64(0)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := latestOffset(t, c, "refuse", 0)
			resp := c.RoundTrip(kafkatest.ProduceRequest(7, tc.acks, "refuse", tc.parts)).(*kmsg.ProduceResponse)
			got := partitionErrors(resp)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("error codes %v, want %v", got, tc.want)
			}
			if after := latestOffset(t, c, "refuse", 0); after != before {
				t.Fatalf("partition 0 grew from %d to %d on a refused batch", before, after)
			}
			for _, code := range tc.want {
				if code == 0 {
					written++
				}
			}
		})
	}
	if got := latestOffset(t, c, "refuse", 1); got != written {
		t.Fatalf("partition 1 holds %d records, want %d", got, written)
	}
}

func ptr[T any](v T) *T { return &v }

// acks=0 gets no response when it succeeds and a closed connection when it
// fails.
func TestProduceAcksZero(t *testing.T) {
	node := startNode(t, "")
	createTopic(t, node.addr, "fire-and-forget", 1, nil)
	c := kafkatest.Dial(t, node.addr)
	c.Send(kafkatest.ProduceRequest(7, 0, "fire-and-forget", map[int32][]byte{0: testBatch(t, 3, -1, -1, -1)}))
	// The next response on the connection must be the ListOffsets one,
	// and it must see the three records.
	if got := latestOffset(t, c, "fire-and-forget", 0); got != 3 {
		t.Fatalf("high watermark %d after acks=0 produce of 3 records, want 3", got)
	}
	bad := testBatch(t, 1, -1, -1, -1)
	bad[len(bad)-1] ^= 1
	c.Send(kafkatest.ProduceRequest(7, 0, "fire-and-forget", map[int32][]byte{0: bad}))
	c.ExpectClosed()
}

// The broker sets baseOffset and partitionLeaderEpoch in place; the CRC
// and every byte from offset 21 on are stored as the client sent them.
func TestProduceKeepsClientBytes(t *testing.T) {
	node := startNode(t, "")
	createTopic(t, node.addr, "bytes", 1, nil)
	c := kafkatest.Dial(t, node.addr)
	first := testBatch(t, 3, -1, -1, -1)
	second := testBatch(t, 2, -1, -1, -1)
	sent := [][]byte{bytes.Clone(first), bytes.Clone(second)}
	for _, b := range [][]byte{first, second} {
		resp := c.RoundTrip(kafkatest.ProduceRequest(9, -1, "bytes", map[int32][]byte{0: b})).(*kmsg.ProduceResponse)
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("produce: %v", kerr.ErrorForCode(code))
		}
	}
	fetch := fetchRequest("bytes", 0, 0, 0)
	resp := c.RoundTrip(fetch).(*kmsg.FetchResponse)
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.HighWatermark != 5 {
		t.Fatalf("fetch: error %d, high watermark %d", p.ErrorCode, p.HighWatermark)
	}
	rest := p.RecordBatches
	wantBase := []int64{0, 3}
	for i, orig := range sent {
		b, r, err := record.Parse(rest)
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		rest = r
		if b.BaseOffset() != wantBase[i] || b.PartitionLeaderEpoch() != 0 {
			t.Errorf("batch %d: baseOffset %d partitionLeaderEpoch %d, want %d and 0", i, b.BaseOffset(), b.PartitionLeaderEpoch(), wantBase[i])
		}
		if b.CRC() != record.Batch(orig).CRC() || !bytes.Equal(b[21:], orig[21:]) {
			t.Errorf("batch %d: bytes from offset 21 or CRC changed", i)
		}
		if !b.ValidCRC() {
			t.Errorf("batch %d: stored CRC invalid", i)
		}
	}
}

// An idempotent producer's retry gets its original offsets back; a gap is
// OUT_OF_ORDER_SEQUENCE_NUMBER; an older epoch is INVALID_PRODUCER_EPOCH.
func TestProduceIdempotence(t *testing.T) {
	node := startNode(t, "")
	createTopic(t, node.addr, "idem", 1, nil)
	c := kafkatest.Dial(t, node.addr)
	init := kmsg.NewPtrInitProducerIDRequest()
	init.Version = 4
	ir := c.RoundTrip(init).(*kmsg.InitProducerIDResponse)
	if ir.ErrorCode != 0 || ir.ProducerID < 0 {
		t.Fatalf("InitProducerId: error %d id %d", ir.ErrorCode, ir.ProducerID)
	}
	pid := ir.ProducerID
	produce := func(epoch int16, seq int32, n int) kmsg.ProduceResponseTopicPartition {
		resp := c.RoundTrip(kafkatest.ProduceRequest(9, -1, "idem", map[int32][]byte{0: testBatch(t, n, pid, epoch, seq)})).(*kmsg.ProduceResponse)
		return resp.Topics[0].Partitions[0]
	}
	steps := []struct {
		name      string
		epoch     int16
		seq       int32
		n         int
		wantCode  int16
		wantBase  int64
		checkBase bool
	}{
		{"first", 0, 0, 3, 0, 0, true},
		{"second", 0, 3, 2, 0, 3, true},
		{"retry of first", 0, 0, 3, 0, 0, true},
		{"retry of second", 0, 3, 2, 0, 3, true},
		{"gap", 0, 9, 1, kerr.OutOfOrderSequenceNumber.Code, 0, false},
		{"next", 0, 5, 1, 0, 5, true},
		{"new epoch needs seq 0", 1, 6, 1, kerr.OutOfOrderSequenceNumber.Code, 0, false},
		{"new epoch", 1, 0, 1, 0, 6, true},
		{"stale epoch", 0, 6, 1, kerr.InvalidProducerEpoch.Code, 0, false},
	}
	for _, s := range steps {
		p := produce(s.epoch, s.seq, s.n)
		if p.ErrorCode != s.wantCode {
			t.Fatalf("%s: error %v, want %v", s.name, kerr.ErrorForCode(p.ErrorCode), kerr.ErrorForCode(s.wantCode))
		}
		if s.checkBase && p.BaseOffset != s.wantBase {
			t.Fatalf("%s: base offset %d, want %d", s.name, p.BaseOffset, s.wantBase)
		}
	}
	if got := latestOffset(t, c, "idem", 0); got != 7 {
		t.Fatalf("log holds %d records, want 7 (retries must not be written)", got)
	}
}
