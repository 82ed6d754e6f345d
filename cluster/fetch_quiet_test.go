package cluster

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/kafkatest"
	"github.com/kbroker/kbroker/internal/testutil"
)

// A parked fetch reads again only the partitions that changed
// (kafkaapi/fetch_watch.go); the answer must still be the one a full read
// gives: records and offsets of the partition written to while it
// waited, the current offsets of the others, nothing more.
func TestParkedFetchAnswersChangesAndQuietPartitions(t *testing.T) {
	node := startNode(t, "")
	createTopic(t, node.addr, "quiet", 3, nil)
	c := kafkatest.Dial(t, node.addr)
	// Partition 2 has records before the fetch, at whose end it reads.
	produceQuiet(t, c, 2, 3)

	req := fetchRequest("quiet", 0, 1<<20, 1500) // MinBytes never reached
	fp := req.Topics[0].Partitions[0]
	req.Topics[0].Partitions = nil
	for p, offset := range []int64{0, 0, 3} {
		fp.Partition, fp.FetchOffset = int32(p), offset
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, fp)
	}
	corr := c.Send(req)
	if testutil.Poll(t.Context(), 10*time.Second, func() bool { return node.fetchWaiters.Len() == 1 }) != nil {
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = req.Version
		c.Recv(corr, resp)
		t.Fatalf("fetch did not wait: %+v", resp)
	}

	producer := kafkatest.Dial(t, node.addr)
	produceQuiet(t, producer, 1, 4)

	resp := kmsg.NewPtrFetchResponse()
	resp.Version = req.Version
	c.Recv(corr, resp)
	want := []struct {
		hw      int64
		records bool
	}{{0, false}, {4, true}, {3, false}}
	ps := resp.Topics[0].Partitions
	if len(ps) != len(want) {
		t.Fatalf("%d partitions in the answer, want %d", len(ps), len(want))
	}
	for i, w := range want {
		p := ps[i]
		if p.Partition != int32(i) || p.ErrorCode != 0 || p.HighWatermark != w.hw || p.LastStableOffset != w.hw ||
			p.LogStartOffset != 0 || (len(p.RecordBatches) > 0) != w.records || p.RecordBatches == nil {
			t.Errorf("partition %d: got partition %d error %v hw %d lso %d log start %d %d record bytes, want hw %d records %v",
				i, p.Partition, kerr.ErrorForCode(p.ErrorCode), p.HighWatermark, p.LastStableOffset, p.LogStartOffset, len(p.RecordBatches), w.hw, w.records)
		}
	}
}

// A partition quiet when the fetch parked but deleted before it expires
// is read again, not answered from what was seen before: the answer says
// it is gone.
func TestParkedFetchSeesDeletedTopic(t *testing.T) {
	node := startNode(t, "")
	createTopic(t, node.addr, "doomed", 1, nil)
	c := kafkatest.Dial(t, node.addr)
	corr := c.Send(fetchRequest("doomed", 0, 1, 3000))
	testutil.Eventually(t, 10*time.Second, func() bool { return node.fetchWaiters.Len() == 1 }, "fetch waiting in the purgatory")

	admin := kafkatest.Dial(t, node.addr)
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.Version = 1
	del.TopicNames = []string{"doomed"}
	del.TimeoutMillis = 5000
	if resp := admin.RoundTrip(del).(*kmsg.DeleteTopicsResponse); resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("delete: %v", kerr.ErrorForCode(resp.Topics[0].ErrorCode))
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 12
	c.Recv(corr, resp)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.UnknownTopicOrPartition.Code && code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("fetch of a topic deleted while it waited: %v, want UNKNOWN_TOPIC_OR_PARTITION or NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(code))
	}
}

func produceQuiet(t *testing.T, c *kafkatest.Conn, partition int32, records int) {
	t.Helper()
	req := kafkatest.ProduceRequest(9, 1, "quiet", map[int32][]byte{0: testBatch(t, records, -1, -1, -1)})
	req.Topics[0].Partitions[0].Partition = partition
	resp := c.RoundTrip(req).(*kmsg.ProduceResponse)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("produce to partition %d: %v", partition, kerr.ErrorForCode(code))
	}
}
