package cluster

// OffsetDelete (key 47).
//
// Deletes a group's committed offsets of partitions whose topics no
// member subscribes to: GROUP_SUBSCRIBED_TO_TOPIC per partition
// otherwise; NON_EMPTY_GROUP when the group has members whose
// subscriptions cannot be read (not a consumer group);
// GROUP_ID_NOT_FOUND for an unknown group. The offsets disappear at once
// and the response waits for their tombstones to be replicated.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/group"
)

func init() {
	register(apiSpec{key: 47, min: 0, max: 0, handle: (*Node).handleOffsetDelete})
}

func (n *Node) handleOffsetDelete(_ context.Context, rc *RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.OffsetDeleteRequest)
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	var tps []group.TopicPartition
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			tps = append(tps, group.TopicPartition{Topic: t.Topic, Partition: p.Partition})
		}
	}
	n.groups.deleteOffsets(req.Group, tps, func(partErrs []error, err error) {
		resp.ErrorCode = errorCode(err)
		if partErrs != nil {
			i := 0
			for _, t := range req.Topics {
				rt := kmsg.NewOffsetDeleteResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetDeleteResponseTopicPartition()
					rp.Partition = p.Partition
					rp.ErrorCode = errorCode(partErrs[i])
					i++
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
		}
		rc.Respond(resp)
	})
	return nil, nil
}
