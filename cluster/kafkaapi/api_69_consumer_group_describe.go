package kafkaapi

// ConsumerGroupDescribe (key 69).
//
// Describes consumer groups: state, group and assignment epochs, the
// assignor, and each member's subscription, current and target
// assignment. An unknown group, or a classic one, is GROUP_ID_NOT_FOUND
// (as Kafka). Needs DESCRIBE on each group; topics the principal may not
// DESCRIBE are TOPIC_AUTHORIZATION_FAILED for the whole group, as Kafka.

import (
	"cmp"
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/group"
	"github.com/kbroker/kbroker/cluster/server"
)

func init() {
	register(apiSpec{key: 69, min: 0, max: 1, handle: (*Handlers).handleConsumerGroupDescribe, actions: consumerGroupDescribeActions})
}

func consumerGroupDescribeActions(_ *server.RequestContext, kreq kmsg.Request) []server.Action {
	var out []server.Action
	for _, g := range kreq.(*kmsg.ConsumerGroupDescribeRequest).Groups {
		out = append(out, server.Action{Operation: kmsg.ACLOperationDescribe, ResourceType: kmsg.ACLResourceTypeGroup, Name: g})
	}
	return out
}

func (h *Handlers) handleConsumerGroupDescribe(_ context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ConsumerGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	img := h.store.Image()
	// A name by id from the image's index: no map of every topic per
	// request.
	topicName := func(id group.TopicID) string {
		if t, ok := img.TopicsByID[id]; ok {
			return t.Name
		}
		return ""
	}
	for _, id := range req.Groups {
		rg := kmsg.NewConsumerGroupDescribeResponseGroup()
		rg.Group = id
		rg.AuthorizedOperations = -2147483648
		if !rc.AuthorizedGroup(kmsg.ACLOperationDescribe, id) {
			rg.ErrorCode = kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		if req.IncludeAuthorizedOperations {
			rg.AuthorizedOperations = rc.AuthorizedOperations(kmsg.ACLResourceTypeGroup, id, groupOperations)
		}
		d, err := h.groups.DescribeConsumer(id)
		if err != nil {
			rg.ErrorCode, rg.ErrorMessage = errcode.Of(err), groupErrorMessage(err)
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		rg.State, rg.Epoch, rg.AssignmentEpoch, rg.AssignorName = d.State, d.Epoch, d.AssignmentEpoch, d.Assignor
		denied := false
		assignment := func(a group.Assignment) kmsg.Assignment {
			out := kmsg.NewAssignment()
			for tid, ps := range a {
				if len(ps) == 0 {
					continue
				}
				tp := kmsg.NewAssignmentTopicPartition()
				tp.TopicID, tp.Topic, tp.Partitions = tid, topicName(tid), ps
				if !rc.AuthorizedTopic(kmsg.ACLOperationDescribe, tp.Topic) {
					denied = true
				}
				out.TopicPartitions = append(out.TopicPartitions, tp)
			}
			slices.SortFunc(out.TopicPartitions, func(a, b kmsg.AssignmentTopicPartition) int { return cmp.Compare(a.Topic, b.Topic) })
			return out
		}
		for _, m := range d.Members {
			rm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
			rm.MemberID, rm.MemberEpoch = m.ID, m.Epoch
			rm.InstanceID, rm.RackID = optString(m.InstanceID), optString(m.RackID)
			rm.ClientID, rm.ClientHost = m.ClientID, m.ClientHost
			rm.SubscribedTopics = m.SubscribedTopics
			if rm.SubscribedTopics == nil {
				rm.SubscribedTopics = []string{}
			}
			rm.SubscribedTopicRegex = optString(m.SubscribedRegex)
			rm.Assignment, rm.TargetAssignment = assignment(m.Assigned), assignment(m.Target)
			rm.MemberType = 1 // consumer protocol (v1+)
			rg.Members = append(rg.Members, rm)
		}
		if denied {
			rg = kmsg.NewConsumerGroupDescribeResponseGroup()
			rg.Group, rg.ErrorCode = id, kerr.TopicAuthorizationFailed.Code
			rg.AuthorizedOperations = -2147483648
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
