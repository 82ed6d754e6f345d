package kafkaapi

// DeleteRecords (key 21).
//
// Moves each partition's log start offset up to the requested offset (-1
// means the high watermark); whole segments below it are deleted and
// reads below it get OFFSET_OUT_OF_RANGE. Offsets above the high
// watermark are OFFSET_OUT_OF_RANGE. The low watermark returned is the
// leader's new log start offset, answered at once. Kafka waits until
// every replica's log start offset has moved (followers take it from the
// leader's fetch responses, as they do here); consumers read only from
// leaders here, so the difference is only when the response comes.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/replication"
)

func init() {
	register(apiSpec{key: 21, min: 0, max: 2, handle: (*Handlers).handleDeleteRecords, actions: deleteRecordsActions})
}

func deleteRecordsActions(_ *server.RequestContext, kreq kmsg.Request) []server.Action {
	return server.TopicActions(kmsg.ACLOperationDelete, func(yield func(string)) {
		for _, t := range kreq.(*kmsg.DeleteRecordsRequest).Topics {
			yield(t.Topic)
		}
	})
}

func (h *Handlers) handleDeleteRecords(_ context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteRecordsResponseTopic()
		rt.Topic = t.Topic
		authorized := rc.AuthorizedTopic(kmsg.ACLOperationDelete, t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewDeleteRecordsResponseTopicPartition()
			rp.Partition = p.Partition
			rp.LowWatermark = -1
			if !authorized {
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			tp := replication.TopicPartition{Topic: t.Topic, Partition: p.Partition}
			part, err := h.hostedPartition(tp)
			if err == nil {
				rp.LowWatermark, err = part.DeleteRecordsBefore(p.Offset)
			}
			rp.ErrorCode = errcode.Of(err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
