package itest

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchReader decodes the big-endian fields of a non-flexible response.
type fetchReader struct {
	b   []byte
	err error
}

func (r *fetchReader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || len(r.b) < n {
		r.err = fmt.Errorf("short response: need %d bytes, have %d", n, len(r.b))
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *fetchReader) i16() int16 {
	if v := r.take(2); v != nil {
		return int16(binary.BigEndian.Uint16(v))
	}
	return 0
}

func (r *fetchReader) i32() int32 {
	if v := r.take(4); v != nil {
		return int32(binary.BigEndian.Uint32(v))
	}
	return 0
}

func (r *fetchReader) i64() int64 {
	if v := r.take(8); v != nil {
		return int64(binary.BigEndian.Uint64(v))
	}
	return 0
}

// TestFetchAtEndHasEmptyNotNullRecords sends Fetch v11 (the version
// librdkafka 2.0 uses) at the high watermark and reads the raw bytes: the
// partition's Records must be an empty byte array (length 0), as Apache
// Kafka sends, not null (length -1). librdkafka rejects a negative
// MessageSetSize as a protocol parse failure ("invalid MessageSetSize -1"),
// drops the whole response and never sees the end of the partition, so
// `kcat -C -e` never exits.
func TestFetchAtEndHasEmptyNotNullRecords(t *testing.T) {
	t.Parallel()
	b := startBroker(t, t.TempDir())
	topic := topicName(t)
	createTopic(t, b, topic, 1, nil)

	req := kmsg.NewPtrFetchRequest()
	req.Version = 11
	req.ReplicaID = -1
	req.MaxWaitMillis = 100
	req.MinBytes = 1
	req.MaxBytes = 1 << 20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition = 0
	rp.FetchOffset = 0 // the high watermark of the empty topic
	rp.LogStartOffset = -1
	rp.CurrentLeaderEpoch = -1
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)

	conn, err := net.DialTimeout("tcp", b.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	const correlationID = 7
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("itest")).AppendRequest(nil, req, correlationID)
	if _, err := conn.Write(frame); err != nil {
		t.Fatal(err)
	}
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		t.Fatalf("reading Fetch response size: %v", err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(conn, body); err != nil {
		t.Fatalf("reading Fetch response: %v", err)
	}

	r := &fetchReader{b: body}
	if got := r.i32(); got != correlationID {
		t.Fatalf("correlation id %d, want %d", got, correlationID)
	}
	r.i32() // ThrottleMillis
	if ec := r.i16(); ec != 0 {
		t.Fatalf("Fetch error code %d", ec)
	}
	r.i32() // SessionID
	if n := r.i32(); n != 1 {
		t.Fatalf("%d topics in response, want 1", n)
	}
	r.take(int(r.i16())) // Topic
	if n := r.i32(); n != 1 {
		t.Fatalf("%d partitions in response, want 1", n)
	}
	r.i32() // Partition
	if ec := r.i16(); ec != 0 {
		t.Fatalf("partition error code %d", ec)
	}
	hwm := r.i64()
	r.i64() // LastStableOffset
	r.i64() // LogStartOffset
	if n := r.i32(); n > 0 {
		t.Fatalf("%d aborted transactions, want none", n)
	}
	r.i32() // PreferredReadReplica
	recordsLen := r.i32()
	if r.err != nil {
		t.Fatalf("decoding Fetch v11 response (%d bytes): %v", len(body), r.err)
	}
	if recordsLen != 0 {
		t.Errorf("Fetch v11 at the high watermark (%d): partition Records length %d, want 0 (an empty, non-null records field; librdkafka fails on a negative MessageSetSize)", hwm, recordsLen)
	}
}
