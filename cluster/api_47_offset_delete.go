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

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/group"
	"github.com/kbroker/kbroker/wire/record"
)

func init() {
	register(apiSpec{key: 47, min: 0, max: 0, handle: (*Node).handleOffsetDelete})
}

func (n *Node) handleOffsetDelete(_ context.Context, rc *RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.OffsetDeleteRequest)
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	if req.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp, nil
	}
	c := n.groups
	c.mu.Lock()
	g, err := c.groupLocked(req.Group, false)
	switch {
	case err != nil:
	case g == nil || g.State() == group.Dead:
		err = kerr.GroupIDNotFound
	}
	var subscribed map[string]bool
	if err == nil && g.HasMembers() {
		subs, known := g.SubscribedTopics()
		if !known {
			err = kerr.NonEmptyGroup
		}
		subscribed = subs
	}
	if err != nil {
		c.mu.Unlock()
		resp.ErrorCode = errorCode(err)
		return resp, nil
	}
	var recs []record.Record
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			tp := group.TopicPartition{Topic: t.Topic, Partition: p.Partition}
			switch {
			case subscribed[t.Topic]:
				rp.ErrorCode = kerr.GroupSubscribedToTopic.Code
			default:
				if _, ok := g.Offsets[tp]; ok {
					delete(g.Offsets, tp)
					recs = append(recs, record.Record{Key: group.OffsetKey(req.Group, tp)})
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	p := c.partitionFor(req.Group)
	c.mu.Unlock()
	if len(recs) == 0 {
		return resp, nil
	}
	c.store(p, recs, func(err error) {
		if err != nil {
			resp.ErrorCode = errorCode(err)
		}
		rc.Respond(resp)
	})
	return nil, nil
}
