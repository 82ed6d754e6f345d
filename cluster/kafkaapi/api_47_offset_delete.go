package kafkaapi

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

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/group"
	"github.com/kbroker/kbroker/cluster/server"
)

func init() {
	register(apiSpec{key: 47, min: 0, max: 0, handle: (*Handlers).handleOffsetDelete})
}

func (h *Handlers) handleOffsetDelete(_ context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.OffsetDeleteRequest)
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	if !rc.AuthorizedGroup(kmsg.ACLOperationDelete, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	// Partitions of topics the principal may not READ are answered
	// TOPIC_AUTHORIZATION_FAILED and keep their offsets.
	var tps []group.TopicPartition
	var refused []bool
	for _, t := range req.Topics {
		ok := rc.AuthorizedTopic(kmsg.ACLOperationRead, t.Topic)
		for _, p := range t.Partitions {
			refused = append(refused, !ok)
			if ok {
				tps = append(tps, group.TopicPartition{Topic: t.Topic, Partition: p.Partition})
			}
		}
	}
	h.groups.DeleteOffsets(req.Group, tps, func(partErrs []error, err error) {
		resp.ErrorCode = errcode.Of(err)
		if partErrs != nil {
			i, k := 0, 0
			for _, t := range req.Topics {
				rt := kmsg.NewOffsetDeleteResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetDeleteResponseTopicPartition()
					rp.Partition = p.Partition
					if refused[k] {
						rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
					} else {
						rp.ErrorCode = errcode.Of(partErrs[i])
						i++
					}
					k++
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
		}
		rc.Respond(resp)
	})
	return nil, nil
}
