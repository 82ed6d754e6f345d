package cluster

import (
	"bytes"
	"context"
	"encoding/binary"
	"github.com/kbroker/kbroker/internal/testutil"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/purgatory"
	"github.com/kbroker/kbroker/replication"
)

// Past queued.max.request.bytes a connection stops reading until memory
// is given back; then it goes on.
func TestQueuedRequestBytesBoundsReading(t *testing.T) {
	waiters := purgatory.New[replication.TopicPartition]("produce")
	cfg := testServerConfig()
	cfg.queuedMaxRequestBytes = 1000
	var handled atomic.Int32
	parking := parkingAPI(waiters, true)
	inner := parking.handle
	parking.handle = func(ctx context.Context, rc *RequestContext, req kmsg.Request) (kmsg.Response, error) {
		handled.Add(1)
		return inner(ctx, rc, req)
	}
	ts := startServer(t, cfg, nil, parking)

	req := produceRequest(9, -1, "t", map[int32][]byte{0: bytes.Repeat([]byte{1}, 600)})
	req.TimeoutMillis = 60_000
	a := dialRaw(t, ts.addr)
	a.send(req)
	testutil.Eventually(t, 5*time.Second, func() bool { return waiters.Len() == 1 }, "the first produce to park")

	b := dialRaw(t, ts.addr)
	req.TimeoutMillis = 100
	corr := b.send(req)
	testutil.Eventually(t, 5*time.Second, func() bool {
		return metricValue(t, ts.metrics.memWaiting) == 1
	}, "the second connection to wait for memory")
	if n := handled.Load(); n != 1 {
		t.Fatalf("%d requests handled while memory was exhausted, want 1", n)
	}
	a.nc.Close() // drops the first request and gives its bytes back
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = 9
	b.recv(corr, resp)
	if n := handled.Load(); n != 2 {
		t.Errorf("%d requests handled, want 2", n)
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return metricValue(t, ts.metrics.queuedBytes) == 0 }, "queued bytes to drain")
}

// A parked request that keeps none of its bytes (an acks=all produce)
// gives them back when it parks, so requests waiting for replication do
// not stop the connections carrying the follower fetches.
func TestParkedProduceReleasesRequestBytes(t *testing.T) {
	waiters := purgatory.New[replication.TopicPartition]("produce")
	cfg := testServerConfig()
	cfg.queuedMaxRequestBytes = 1000
	ts := startServer(t, cfg, nil, parkingAPI(waiters, false))
	req := produceRequest(9, -1, "t", map[int32][]byte{0: bytes.Repeat([]byte{1}, 600)})
	req.TimeoutMillis = 60_000
	for i := range 3 { // 3 x 650 bytes parked under a 1000-byte bound
		dialRaw(t, ts.addr).send(req)
		testutil.Eventually(t, 5*time.Second, func() bool { return waiters.Len() == i+1 }, "the produce to park")
	}
	if got := metricValue(t, ts.metrics.queuedBytes); got != 0 {
		t.Errorf("%v request bytes held by parked produces", got)
	}
}

// metadataFrameBody is a Metadata request body naming count topics of
// the smallest encoding of version v: empty names (v1) or null names with
// a zero topic id (flexible versions).
func metadataFrameBody(c *rawConn, version int16, count int) []byte {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = version
	c.corr++
	body := c.header(3, version, req.IsFlexible())
	if !req.IsFlexible() {
		body = binary.BigEndian.AppendUint32(body, uint32(count))
		return append(body, make([]byte, 2*count)...) // int16 length 0 each
	}
	body = binary.AppendUvarint(body, uint64(count)+1)
	elem := make([]byte, 16+1+1) // topic id, null compact string, no tags
	for range count {
		body = append(body, elem...)
	}
	return append(body, 1, 0, 0) // allow auto-create, no tags
}

// A Metadata request naming millions of topics (8 MB on the wire, far
// more decoded) is refused before decoding: the connection closes and the
// broker allocates little more than the frame.
func TestMetadataWithMillionsOfTopicsRefused(t *testing.T) {
	count := 4_000_000
	node := startNode(t, "")
	for _, tc := range []struct {
		version int16
		count   int
	}{
		{1, count},
		{12, 200_000},
	} {
		c := dialRaw(t, node.addr)
		body := metadataFrameBody(c, tc.version, tc.count)

		var stop atomic.Bool
		var peak uint64
		var wg sync.WaitGroup
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var m runtime.MemStats
			for !stop.Load() {
				runtime.ReadMemStats(&m)
				peak = max(peak, m.HeapAlloc)
				time.Sleep(time.Millisecond)
			}
		}()
		start := time.Now()
		c.writeFrame(body)
		c.expectClosed()
		elapsed := time.Since(start)
		stop.Store(true)
		wg.Wait()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		allocated := after.TotalAlloc - before.TotalAlloc
		t.Logf("Metadata v%d, %d topics, %d-byte frame: refused in %v; allocated %d MB, peak heap %d MB above the %d MB before",
			tc.version, tc.count, len(body), elapsed, allocated>>20, (max(peak, before.HeapAlloc)-before.HeapAlloc)>>20, before.HeapAlloc>>20)
		if allocated > 200<<20 {
			t.Errorf("allocated %d MB for a %d MB frame", allocated>>20, len(body)>>20)
		}
	}
	if got := metricValue(t, node.metrics.refused.WithLabelValues("Metadata")); got != 2 {
		t.Errorf("refused{api=Metadata} = %v, want 2", got)
	}
	apiVersionsOK(t, dialRaw(t, node.addr))
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
