package server

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/wire"
)

// TestPooledFrame checks which request frames go into a pooled buffer:
// a Produce's up to pooledFrameMax, never another API's (their decoded
// forms may keep bytes of the frame, e.g. group member metadata).
func TestPooledFrame(t *testing.T) {
	frame := func(key int16) *bufio.Reader {
		b := binary.BigEndian.AppendUint16(nil, uint16(key))
		return bufio.NewReader(bytes.NewReader(append(b, 0, 0, 0, 0)))
	}
	for _, tc := range []struct {
		name string
		key  int16
		size int32
		want bool
	}{
		{"produce", 0, 100, true},
		{"produce at the bound", 0, pooledFrameMax, true},
		{"produce above the bound", 0, pooledFrameMax + 1, false},
		{"too short for a key", 0, 1, false},
		{"fetch", 1, 100, false},
		{"join group", 11, 100, false},
		{"sync group", 14, 100, false},
		{"sasl authenticate", 36, 100, false},
		{"txn offset commit", 28, 100, false},
	} {
		if got := pooledFrame(frame(tc.key), tc.size); got != tc.want {
			t.Errorf("%s: pooledFrame = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestWriteSizeHint checks that a fetch response's hint covers its
// encoded size, so it is encoded into one pooled buffer without growing.
func TestWriteSizeHint(t *testing.T) {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 12
	for ti := range 3 {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = "topic-" + string(rune('a'+ti))
		for p := range 6 {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = int32(p)
			rp.RecordBatches = make([]byte, 1000*(p+1))
			rp.AbortedTransactions = make([]kmsg.FetchResponseTopicPartitionAbortedTransaction, p)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	s := &slot{hdr: wire.RequestHeader{APIKey: 1, APIVersion: 12}, done: make(chan struct{})}
	s.finish(resp, false, nil)
	if got, hint := len(appendResponse(nil, s)), slotSizeHint(s); hint < got {
		t.Fatalf("hint %d bytes, encoded %d", hint, got)
	}
}

// writeCounter is a net.Conn that records the size of each write.
type writeCounter struct {
	net.Conn // nil: only what writeLoop calls is implemented
	writes   []int
}

func (w *writeCounter) Write(p []byte) (int, error) {
	w.writes = append(w.writes, len(p))
	return len(p), nil
}
func (w *writeCounter) SetWriteDeadline(time.Time) error { return nil }
func (w *writeCounter) RemoteAddr() net.Addr             { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

// TestWriteLoopBoundsCoalescedWrites: responses already complete share a
// write only up to about maxCoalescedBytes, counted on the responses being
// gathered (not on the connection's previous write), so a burst of large
// fetch responses is not encoded into one buffer of all of them.
func TestWriteLoopBoundsCoalescedWrites(t *testing.T) {
	srv := New(slog.New(slog.NewTextHandler(io.Discard, nil)), nil, testServerConfig(), NewMetrics())
	nc := &writeCounter{}
	c := newConn(srv, nc, "PLAINTEXT")
	const responses, recordBytes = 12, 100 << 10
	for range responses {
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = 12
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = "t"
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.RecordBatches = make([]byte, recordBytes)
		rt.Partitions = append(rt.Partitions, rp)
		resp.Topics = append(resp.Topics, rt)
		s := &slot{hdr: wire.RequestHeader{APIKey: 1, APIVersion: 12}, done: make(chan struct{})}
		s.finish(resp, false, nil)
		c.slots <- s
	}
	close(c.slots)
	c.writeLoop()
	total := 0
	for _, n := range nc.writes {
		total += n
		if n > maxCoalescedBytes+recordBytes+1024 {
			t.Errorf("one write of %d bytes: more than %d bytes of responses coalesced", n, maxCoalescedBytes)
		}
	}
	if total < responses*recordBytes {
		t.Fatalf("wrote %d bytes in %d writes, want all %d responses", total, len(nc.writes), responses)
	}
	if len(nc.writes) > responses/2 {
		t.Errorf("%d writes for %d complete responses of %d KiB: nothing coalesced", len(nc.writes), responses, recordBytes>>10)
	}
}
