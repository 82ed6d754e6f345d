package kafkaapi

// SyncGroup (key 14).
//
// Members send it after a JoinGroup; the leader's carries the assignment.
// The leader's assignment is written to __consumer_offsets (the group's
// metadata record) and every waiting member is answered once it is
// replicated; a failed write sends the members the write's error and the
// group rebalances. v5 checks the protocol type and name against the
// group's (INCONSISTENT_GROUP_PROTOCOL).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/group"
	"github.com/kbroker/kbroker/cluster/server"
)

func init() {
	register(apiSpec{key: 14, min: 0, max: 5, handle: (*Handlers).handleSyncGroup,
		actions: server.GroupAction(kmsg.ACLOperationRead, func(r kmsg.Request) string { return r.(*kmsg.SyncGroupRequest).Group })})
}

func (h *Handlers) handleSyncGroup(_ context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.SyncGroupRequest)
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	respond := func(r group.SyncResult) {
		resp.ErrorCode = errcode.Of(r.Err)
		resp.MemberAssignment = r.Assignment
		if r.Err == nil {
			pt, p := r.ProtocolType, r.Protocol
			resp.ProtocolType, resp.Protocol = &pt, &p
		}
		rc.Respond(resp)
	}
	if !rc.AuthorizedGroup(kmsg.ACLOperationRead, req.Group) {
		respond(group.SyncResult{Err: kerr.GroupAuthorizationFailed})
		return nil, nil
	}
	sr := group.SyncRequest{
		MemberID:     req.MemberID,
		InstanceID:   deref(req.InstanceID),
		Generation:   req.Generation,
		ProtocolType: req.ProtocolType,
		Protocol:     req.Protocol,
		Assignments:  make(map[string][]byte, len(req.GroupAssignment)),
	}
	for _, a := range req.GroupAssignment {
		sr.Assignments[a.MemberID] = a.MemberAssignment
	}
	h.groups.SyncGroup(req.Group, sr, respond)
	return nil, nil
}
