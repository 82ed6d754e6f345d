package kafkaapi

// LeaveGroup (key 13).
//
// v0–2 name one member; v3+ a batch of members (by member id, or by
// group.instance.id for static members, KIP-345), each with its own
// error. A departure rebalances the group; the last one leaves it Empty.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/group"
	"github.com/kbroker/kbroker/cluster/server"
)

func init() {
	register(apiSpec{key: 13, min: 0, max: 5, handle: (*Handlers).handleLeaveGroup,
		actions: server.GroupAction(kmsg.ACLOperationRead, func(r kmsg.Request) string { return r.(*kmsg.LeaveGroupRequest).Group })})
}

func (h *Handlers) handleLeaveGroup(_ context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.LeaveGroupRequest)
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	if !rc.AuthorizedGroup(kmsg.ACLOperationRead, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	var leaving []group.LeaveMember
	if req.Version < 3 {
		leaving = []group.LeaveMember{{MemberID: req.MemberID}}
	} else {
		for _, m := range req.Members {
			leaving = append(leaving, group.LeaveMember{MemberID: m.MemberID, InstanceID: deref(m.InstanceID)})
		}
	}
	errs, groupErr := h.groups.Leave(req.Group, leaving)
	if req.Version < 3 {
		if groupErr == nil {
			groupErr = errs[0]
		}
		resp.ErrorCode = errcode.Of(groupErr)
		return resp, nil
	}
	resp.ErrorCode = errcode.Of(groupErr)
	if groupErr != nil {
		return resp, nil
	}
	for i, m := range req.Members {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID = m.MemberID
		rm.InstanceID = m.InstanceID
		rm.ErrorCode = errcode.Of(errs[i])
		resp.Members = append(resp.Members, rm)
	}
	return resp, nil
}
