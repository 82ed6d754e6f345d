package kafkaapi

// ShareGroupDescribe (key 77).
//
// KIP-932.
//
// Each share group this broker coordinates with its state (Empty or
// Stable), epochs, the "simple" assignor, and its members with their
// subscriptions and assignments. A group id it does not know, or one of
// a classic or consumer group, is GROUP_ID_NOT_FOUND; one it does not
// coordinate, NOT_COORDINATOR. Needs DESCRIBE on each group
// (GROUP_AUTHORIZATION_FAILED).

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
)

func init() {
	register(apiSpec{key: 77, min: 0, max: 1, handle: (*Handlers).handleShareGroupDescribe})
}

func (h *Handlers) handleShareGroupDescribe(_ context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ShareGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	img := h.image()
	for _, id := range req.GroupIDs {
		rg := kmsg.NewShareGroupDescribeResponseGroup()
		rg.GroupID = id
		fail := func(err error) {
			rg.ErrorCode, rg.ErrorMessage = errcode.Of(err), errcode.Message(err)
			rg.GroupState = "Dead"
		}
		if !rc.AuthorizedGroup(kmsg.ACLOperationDescribe, id) {
			fail(kerr.GroupAuthorizationFailed)
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		d, err := h.shares.Describe(id)
		switch {
		case err != nil && h.otherGroupType(id):
			fail(fmt.Errorf("%w: group %s is not a share group", kerr.GroupIDNotFound, id))
		case err != nil:
			fail(err)
		default:
			rg.GroupState, rg.GroupEpoch, rg.AssignmentEpoch, rg.Assignor = d.State, d.Epoch, d.Epoch, "simple"
			for _, m := range d.Members {
				rm := kmsg.NewShareGroupDescribeResponseGroupMember()
				rm.MemberID, rm.MemberEpoch, rm.ClientID, rm.ClientHost = m.ID, m.Epoch, m.ClientID, m.ClientHost
				if m.RackID != "" {
					rack := m.RackID
					rm.RackID = &rack
				}
				rm.SubscribedTopicNames = slices.Clone(m.Topics)
				for _, name := range slices.Sorted(maps.Keys(m.Assignment)) {
					tp := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
					tp.Topic, tp.Partitions = name, slices.Clone(m.Assignment[name])
					if t, ok := img.Topics[name]; ok {
						tp.TopicID = t.ID
					}
					rm.Assignment.TopicPartitions = append(rm.Assignment.TopicPartitions, tp)
				}
				rg.Members = append(rg.Members, rm)
			}
			rg.AuthorizedOperations = -2147483648 // not asked for
			if req.IncludeAuthorizedOperations {
				rg.AuthorizedOperations = rc.AuthorizedOperations(kmsg.ACLResourceTypeGroup, id, groupOperations)
			}
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}
