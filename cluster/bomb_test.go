package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/kafkatest"
	"github.com/kbroker/kbroker/wire/record"
)

// zstdBomb79 is the 79-byte produce of the report: a one-record zstd batch
// whose frame declares 1e11 bytes of content.
func zstdBomb79() []byte {
	frame := []byte{0x28, 0xb5, 0x2f, 0xfd, 3 << 6, (20 - 10) << 3} // 8-byte content size, 1 MiB window
	frame = binary.LittleEndian.AppendUint64(frame, 1e11)
	const block = 128<<10<<3 | 1<<1 | 1 // 128 KiB, RLE, last
	frame = append(frame, byte(block&0xff), byte(block>>8&0xff), byte(block>>16), 0)
	b := make([]byte, record.HeaderSize, record.HeaderSize+len(frame))
	b = append(b, frame...)
	be := binary.BigEndian
	be.PutUint32(b[8:], uint32(len(b)-record.LogOverhead))
	be.PutUint32(b[12:], math.MaxUint32)
	b[16] = record.MagicV2
	be.PutUint16(b[21:], uint16(record.CodecZstd))
	now := uint64(time.Now().UnixMilli())
	be.PutUint64(b[27:], now)
	be.PutUint64(b[35:], now)
	be.PutUint64(b[43:], math.MaxUint64) // producer id -1
	be.PutUint16(b[51:], math.MaxUint16)
	be.PutUint32(b[53:], math.MaxUint32)
	be.PutUint32(b[57:], 1)
	record.Batch(b).SetCRC()
	return b
}

// TestDecompressionBombProduce: the 79-byte zstd bomb declaring 1e11
// bytes, which used to end in "fatal error: runtime: out of memory", is
// answered INVALID_RECORD on a topic whose max.message.bytes is at its
// bound, and the broker goes on serving.
func TestDecompressionBombProduce(t *testing.T) {
	node := startNode(t, "")
	createTopic(t, node.addr, "bomb", 1, map[string]*string{"max.message.bytes": ptr("104857600")})
	bomb := zstdBomb79()
	if len(bomb) != 79 {
		t.Fatalf("bomb is %d bytes", len(bomb))
	}
	c := kafkatest.Dial(t, node.addr)
	for i := 0; i < 3; i++ {
		resp := c.RoundTrip(kafkatest.ProduceRequest(9, -1, "bomb", map[int32][]byte{0: bomb})).(*kmsg.ProduceResponse)
		if errs := partitionErrors(resp); len(errs) != 1 || errs[0] != kerr.InvalidRecord.Code {
			t.Fatalf("bomb answered %v, want INVALID_RECORD (%d)", errs, kerr.InvalidRecord.Code)
		}
	}
	produceSync(t, node.addr, jsonRecords("bomb")[:10], kgo.ProducerBatchCompression(kgo.ZstdCompression()))
}

// TestMaxMessageBytesBoundAdmin: max.message.bytes above
// socket.request.max.bytes is refused with INVALID_CONFIG, on a topic
// (CreateTopics, IncrementalAlterConfigs) and as the cluster-wide default.
func TestMaxMessageBytesBoundAdmin(t *testing.T) {
	node := startNode(t, "")
	cl, err := kgo.NewClient(kgo.SeedBrokers(node.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	huge := "2147483647"

	created, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"max.message.bytes": &huge}, "huge")
	if err == nil {
		err = created.Err
	}
	if !errors.Is(err, kerr.InvalidConfig) {
		t.Fatalf("CreateTopics with max.message.bytes=%s: %v, want INVALID_CONFIG", huge, err)
	}

	createTopic(t, node.addr, "t", 1, nil)
	res, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "max.message.bytes", Value: &huge}}, "t")
	if err != nil || len(res) != 1 || !errors.Is(res[0].Err, kerr.InvalidConfig) {
		t.Fatalf("topic max.message.bytes=%s: %v %+v, want INVALID_CONFIG", huge, err, res)
	}
	res, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "message.max.bytes", Value: &huge}})
	if err != nil || len(res) != 1 || !errors.Is(res[0].Err, kerr.InvalidConfig) {
		t.Fatalf("cluster message.max.bytes=%s: %v %+v, want INVALID_CONFIG", huge, err, res)
	}
	ok := "104857600"
	res, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "message.max.bytes", Value: &ok}})
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("cluster message.max.bytes=%s: %v %+v", ok, err, res)
	}
}
