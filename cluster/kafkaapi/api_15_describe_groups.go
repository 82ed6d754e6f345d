package kafkaapi

// DescribeGroups (key 15).
//
// Each group is described by its coordinator (NOT_COORDINATOR elsewhere,
// COORDINATOR_LOAD_IN_PROGRESS while loading). An unknown group is
// answered as Kafka does: state Dead, no error before v6, GROUP_ID_NOT_FOUND
// from v6 (KIP-1043); so is a consumer (KIP-848) group. As in Kafka, the protocol
// and the members' metadata and assignments are only shown when the group
// is Stable. Needs DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED);
// the group's authorized operations (v3+) are computed when asked for,
// else -2^31 ("not requested") is sent.

import (
	"context"
	"errors"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiSpec{key: 15, min: 0, max: 6, handle: (*Handlers).handleDescribeGroups, actions: describeGroupsActions})
}

// groupOperations are the operations Kafka defines on a GROUP.
var groupOperations = []kmsg.ACLOperation{kmsg.ACLOperationRead, kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete}

func describeGroupsActions(_ *server.RequestContext, kreq kmsg.Request) []server.Action {
	var out []server.Action
	for _, g := range kreq.(*kmsg.DescribeGroupsRequest).Groups {
		out = append(out, server.Action{Operation: kmsg.ACLOperationDescribe, ResourceType: kmsg.ACLResourceTypeGroup, Name: g})
	}
	return out
}

func (h *Handlers) handleDescribeGroups(_ context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, id := range req.Groups {
		rg := kmsg.NewDescribeGroupsResponseGroup()
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
		s, err := h.groups.Describe(id)
		if errors.Is(err, kerr.GroupIDNotFound) {
			// Unknown, or not a classic group: Dead without error
			// before v6, GROUP_ID_NOT_FOUND from v6 (KIP-1043).
			rg.State = s.State
			if req.Version < 6 {
				err = nil
			} else {
				rg.ErrorMessage = groupErrorMessage(err)
			}
		}
		rg.ErrorCode = errcode.Of(err)
		if err == nil {
			rg.State, rg.ProtocolType, rg.Protocol = s.State, s.ProtocolType, s.Protocol
			for _, m := range s.Members {
				rm := kmsg.NewDescribeGroupsResponseGroupMember()
				rm.MemberID = m.ID
				if m.InstanceID != "" {
					id := m.InstanceID
					rm.InstanceID = &id
				}
				rm.ClientID, rm.ClientHost = m.ClientID, m.ClientHost
				rm.ProtocolMetadata, rm.MemberAssignment = m.Metadata, m.Assignment
				rg.Members = append(rg.Members, rm)
			}
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}
