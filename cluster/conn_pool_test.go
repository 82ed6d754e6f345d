package cluster

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"testing"

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
	if got, hint := len(appendResponse(nil, s)), writeSizeHint([]*slot{s}); hint < got {
		t.Fatalf("hint %d bytes, encoded %d", hint, got)
	}
}
