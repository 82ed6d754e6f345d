package cluster

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/kafkatest"
	"github.com/kbroker/kbroker/internal/testutil"
)

func fetchRequest(topic string, offset int64, minBytes, maxWaitMs int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	req.ReplicaID = -1
	req.MaxBytes = 1 << 20
	req.MinBytes = minBytes
	req.MaxWaitMillis = maxWaitMs
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.FetchOffset = offset
	fp.PartitionMaxBytes = 1 << 20
	fp.CurrentLeaderEpoch = -1
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	return req
}

// A fetch at the end of the log waits in the purgatory and is answered as
// soon as an append provides MinBytes, not at MaxWaitMillis.
func TestDelayedFetchWokenByAppend(t *testing.T) {
	node := startNode(t, "")
	createTopic(t, node.addr, "wait", 1, nil)
	consumer := kafkatest.Dial(t, node.addr)
	corr := consumer.Send(fetchRequest("wait", 0, 1, 30_000))

	producer := kafkatest.Dial(t, node.addr)
	start := time.Now()
	resp := producer.RoundTrip(kafkatest.ProduceRequest(9, 1, "wait", map[int32][]byte{0: testBatch(t, 4, -1, -1, -1)})).(*kmsg.ProduceResponse)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("produce: %v", kerr.ErrorForCode(code))
	}
	fetch := kmsg.NewPtrFetchResponse()
	fetch.Version = 12
	consumer.Recv(corr, fetch)
	// Far below the 30s MaxWait: the append woke the fetch.
	if waited := time.Since(start); waited > 15*time.Second {
		t.Fatalf("fetch answered after %v", waited)
	}
	p := fetch.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.HighWatermark != 4 || len(p.RecordBatches) == 0 {
		t.Fatalf("fetch: error %d high watermark %d %d bytes", p.ErrorCode, p.HighWatermark, len(p.RecordBatches))
	}
}

// With no data, a fetch is answered empty after MaxWaitMillis.
func TestDelayedFetchExpires(t *testing.T) {
	node := startNode(t, "")
	createTopic(t, node.addr, "idle", 1, nil)
	c := kafkatest.Dial(t, node.addr)
	start := time.Now()
	resp := c.RoundTrip(fetchRequest("idle", 0, 1, 300)).(*kmsg.FetchResponse)
	if waited := time.Since(start); waited < 300*time.Millisecond {
		t.Fatalf("empty fetch answered after %v, before MaxWaitMillis", waited)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.RecordBatches == nil || len(p.RecordBatches) != 0 {
		t.Fatalf("error %d records %v", p.ErrorCode, p.RecordBatches)
	}
}

func TestFetchOutOfRange(t *testing.T) {
	node := startNode(t, "")
	createTopic(t, node.addr, "range", 1, nil)
	c := kafkatest.Dial(t, node.addr)
	c.RoundTrip(kafkatest.ProduceRequest(9, 1, "range", map[int32][]byte{0: testBatch(t, 2, -1, -1, -1)}))
	resp := c.RoundTrip(fetchRequest("range", 5, 1, 100)).(*kmsg.FetchResponse)
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != kerr.OffsetOutOfRange.Code || p.HighWatermark != 2 || p.LogStartOffset != 0 {
		t.Fatalf("error %d high watermark %d log start %d", p.ErrorCode, p.HighWatermark, p.LogStartOffset)
	}
}

// Shutting down answers a fetch that is waiting instead of hanging, and
// the node stops.
func TestShutdownAnswersWaitingRequests(t *testing.T) {
	node := startNode(t, "")
	createTopic(t, node.addr, "bye", 1, nil)
	c := kafkatest.Dial(t, node.addr)
	corr := c.Send(fetchRequest("bye", 0, 1, 60_000))
	testutil.Eventually(t, 10*time.Second, func() bool { return node.fetchWaiters.Len() == 1 }, "fetch waiting in the purgatory")
	done := make(chan struct{})
	go func() { node.stop(t); close(done) }()
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 12
	c.Recv(corr, resp)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("node did not stop")
	}
}
