package cluster

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/wire"
)

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
