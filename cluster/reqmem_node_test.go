package cluster

import (
	"encoding/binary"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/kafkatest"
	"github.com/twmb/franz-go/pkg/kmsg"
)

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
		c := kafkatest.Dial(t, node.addr)
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
		c.WriteFrame(body)
		c.ExpectClosed()
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
	if got := nodeMetric(t, node.Node, "kbroker_requests_refused_total", "api", "Metadata"); got != 2 {
		t.Errorf("refused{api=Metadata} = %v, want 2", got)
	}
	kafkatest.APIVersionsOK(t, kafkatest.Dial(t, node.addr))
}

// metadataFrameBody is a Metadata request body naming count topics of
// the smallest encoding of version v: empty names (v1) or null names with
// a zero topic id (flexible versions).
func metadataFrameBody(c *kafkatest.Conn, version int16, count int) []byte {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = version
	c.Corr++
	body := c.Header(3, version, req.IsFlexible())
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
