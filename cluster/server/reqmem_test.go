package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/kafkatest"
	"github.com/kbroker/kbroker/internal/testutil"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/purgatory"
)

// Past queued.max.request.bytes a connection stops reading until memory
// is given back; then it goes on.
func TestQueuedRequestBytesBoundsReading(t *testing.T) {
	waiters := purgatory.New[string]("produce")
	cfg := testServerConfig()
	cfg.queuedMaxRequestBytes = 1000
	var handled atomic.Int32
	parking := parkingAPI(waiters, true)
	inner := parking.Handle
	parking.Handle = func(ctx context.Context, rc *RequestContext, req kmsg.Request) (kmsg.Response, error) {
		handled.Add(1)
		return inner(ctx, rc, req)
	}
	ts := startServer(t, cfg, nil, parking)

	req := kafkatest.ProduceRequest(9, -1, "t", map[int32][]byte{0: bytes.Repeat([]byte{1}, 600)})
	req.TimeoutMillis = 60_000
	a := kafkatest.Dial(t, ts.addr)
	a.Send(req)
	testutil.Eventually(t, 5*time.Second, func() bool { return waiters.Len() == 1 }, "the first produce to park")

	b := kafkatest.Dial(t, ts.addr)
	req.TimeoutMillis = 100
	corr := b.Send(req)
	testutil.Eventually(t, 5*time.Second, func() bool {
		return metricValue(t, ts.metrics.memWaiting) == 1
	}, "the second connection to wait for memory")
	if n := handled.Load(); n != 1 {
		t.Fatalf("%d requests handled while memory was exhausted, want 1", n)
	}
	a.NC.Close() // drops the first request and gives its bytes back
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = 9
	b.Recv(corr, resp)
	if n := handled.Load(); n != 2 {
		t.Errorf("%d requests handled, want 2", n)
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return metricValue(t, ts.metrics.queuedBytes) == 0 }, "queued bytes to drain")
}

// A parked request that keeps none of its bytes (an acks=all produce)
// gives them back when it parks, so requests waiting for replication do
// not stop the connections carrying the follower fetches.
func TestParkedProduceReleasesRequestBytes(t *testing.T) {
	waiters := purgatory.New[string]("produce")
	cfg := testServerConfig()
	cfg.queuedMaxRequestBytes = 1000
	ts := startServer(t, cfg, nil, parkingAPI(waiters, false))
	req := kafkatest.ProduceRequest(9, -1, "t", map[int32][]byte{0: bytes.Repeat([]byte{1}, 600)})
	req.TimeoutMillis = 60_000
	for i := range 3 { // 3 x 650 bytes parked under a 1000-byte bound
		kafkatest.Dial(t, ts.addr).Send(req)
		testutil.Eventually(t, 5*time.Second, func() bool { return waiters.Len() == i+1 }, "the produce to park")
	}
	if got := metricValue(t, ts.metrics.queuedBytes); got != 0 {
		t.Errorf("%v request bytes held by parked produces", got)
	}
}

// The leading-array bound applies to the versions whose first field is
// the array, in both encodings, and nowhere else.
func TestCheckArrayBounds(t *testing.T) {
	over := uint32(maxLeadingArrayLen + 1)
	int32Count := func(n uint32) []byte { return binary.BigEndian.AppendUint32(nil, n) }
	compactCount := func(n uint32) []byte { return binary.AppendUvarint(nil, uint64(n)+1) }
	for _, tc := range []struct {
		name    string
		key     int16
		version int16
		body    []byte
		refused bool
	}{
		{"metadata v1 at the bound", 3, 1, int32Count(maxLeadingArrayLen), false},
		{"metadata v1 over", 3, 1, int32Count(over), true},
		{"metadata v12 over", 3, 12, compactCount(over), true},
		{"metadata v1 null", 3, 1, int32Count(0xffffffff), false},
		{"metadata v12 null", 3, 12, []byte{0}, false},
		{"offset fetch v7 starts with a group name", 9, 7, int32Count(over), false},
		{"offset fetch v8 over", 9, 8, compactCount(over), true},
		{"offset for leader epoch v2 over", 23, 2, int32Count(over), true},
		{"offset for leader epoch v3 starts with the replica id", 23, 3, int32Count(over), false},
		{"produce is not bounded here", 0, 9, int32Count(over), false},
		{"truncated body is left to the decoder", 3, 1, []byte{1}, false},
	} {
		req := kmsg.RequestForKey(tc.key)
		req.SetVersion(tc.version)
		if err := checkArrayBounds(req, tc.body); (err != nil) != tc.refused {
			t.Errorf("%s: err %v, want refused %v", tc.name, err, tc.refused)
		}
	}
}
