package kafkaapi

// The read_committed side of a consumer fetch: records up to the last
// stable offset, and the aborted transactions among them so the consumer
// can drop their records.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/storage"
	"github.com/kbroker/kbroker/wire/record"
)

// readConsumerPartition reads one partition for a consumer: up to the
// high watermark, or up to the last stable offset when readCommitted,
// with the aborted transactions overlapping what was read (never nil then,
// as Kafka sends an empty list to read_committed consumers). It returns
// the last stable offset.
func (h *Handlers) readConsumerPartition(tp replication.TopicPartition, currentLeaderEpoch int32, offset int64, maxBytes int, minOneBatch, readCommitted bool, bufs *storage.ReadBuffers) (replication.FetchResult, int64, []kmsg.FetchResponseTopicPartitionAbortedTransaction, error) {
	if !readCommitted {
		res, err := h.readPartition(tp, currentLeaderEpoch, offset, maxBytes, minOneBatch, bufs)
		return res, res.HighWatermark, nil, err
	}
	part, err := h.hostedPartition(tp)
	if err != nil {
		return replication.FetchResult{}, -1, nil, err
	}
	if err := part.CheckLeaderEpoch(currentLeaderEpoch); err != nil {
		return replication.FetchResult{}, -1, nil, err
	}
	if !part.IsLeader() {
		return replication.FetchResult{}, -1, nil, replication.ErrNotLeader
	}
	hw := part.HighWatermark()
	lso := part.Log().LastStableOffset(hw)
	res := replication.FetchResult{HighWatermark: hw, LogStartOffset: part.LogStartOffset()}
	recs, err := part.Log().ReadPooled(offset, maxBytes, lso, minOneBatch, bufs)
	if err != nil {
		return res, lso, nil, err
	}
	res.Records = recs
	aborted := []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
	if end := nextOffsetAfter(recs); end > offset {
		txns, err := part.Log().AbortedTransactions(offset, end)
		if err != nil {
			return res, lso, nil, err
		}
		for _, t := range txns {
			a := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
			a.ProducerID, a.FirstOffset = t.ProducerID, t.FirstOffset
			aborted = append(aborted, a)
		}
	}
	return res, lso, aborted, nil
}

// nextOffsetAfter is the offset after the last whole batch of recs (0
// when there is none).
func nextOffsetAfter(recs []byte) int64 {
	var next int64
	for len(recs) > 0 {
		b, rest, err := record.Parse(recs)
		if err != nil {
			break
		}
		next = b.LastOffset() + 1
		recs = rest
	}
	return next
}
