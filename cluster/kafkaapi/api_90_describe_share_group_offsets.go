package kafkaapi

// DescribeShareGroupOffsets (key 90).
//
// KIP-932; v1 adds the lag.
//
// The start offset of each share-partition of the groups named (all the
// ones a group has state for when its topics are null), read from their
// share coordinators, with the lag: the high watermark less the start
// offset less the records past it already acknowledged or archived.
// Served by the group's coordinator (NOT_COORDINATOR elsewhere); a
// group it does not know is GROUP_ID_NOT_FOUND. Needs DESCRIBE on the
// group (GROUP_AUTHORIZATION_FAILED) and on each topic
// (TOPIC_AUTHORIZATION_FAILED).

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/replication"
)

func init() {
	register(apiSpec{key: 90, min: 0, max: 1, handle: (*Handlers).handleDescribeShareGroupOffsets})
}

func (h *Handlers) handleDescribeShareGroupOffsets(ctx context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, g := range req.Groups {
		rg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		rg.GroupID = g.GroupID
		if !rc.AuthorizedGroup(kmsg.ACLOperationDescribe, g.GroupID) {
			rg.ErrorCode = kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		var topics map[string][]int32
		if g.Topics != nil {
			topics = map[string][]int32{}
			for _, t := range g.Topics {
				topics[t.Topic] = append(topics[t.Topic], t.Partitions...)
			}
		}
		offsets, err := h.shares.DescribeOffsets(ctx, g.GroupID, topics)
		if err != nil {
			rg.ErrorCode, rg.ErrorMessage = errcode.Of(err), errcode.Message(err)
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		idx := map[string]int{}
		for _, po := range offsets {
			i, ok := idx[po.Topic]
			if !ok {
				i = len(rg.Topics)
				idx[po.Topic] = i
				rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
				rt.Topic, rt.TopicID = po.Topic, po.TopicID
				rg.Topics = append(rg.Topics, rt)
			}
			rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
			rp.Partition, rp.StartOffset, rp.LeaderEpoch, rp.Lag = po.Partition, po.StartOffset, po.LeaderEpoch, -1
			err := po.Err
			if !rc.AuthorizedTopic(kmsg.ACLOperationDescribe, po.Topic) {
				err = kerr.TopicAuthorizationFailed
				rp.StartOffset = -1
			}
			if err == nil && po.StartOffset >= 0 {
				// The high watermark of a replica hosted here; the lag of a
				// partition this broker has no replica of is unknown (-1).
				if part, perr := h.hostedPartition(replication.TopicPartition{Topic: po.Topic, Partition: po.Partition}); perr == nil {
					rp.Lag = max(0, part.HighWatermark()-po.StartOffset-int64(po.DeliveryComplete))
				}
			}
			rp.ErrorCode, rp.ErrorMessage = errcode.Of(err), errcode.Message(err)
			rg.Topics[i].Partitions = append(rg.Topics[i].Partitions, rp)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}
