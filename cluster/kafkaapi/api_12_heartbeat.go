package kafkaapi

// Heartbeat (key 12).
//
// Keeps a member's session alive. REBALANCE_IN_PROGRESS tells a member of
// the current generation to rejoin; ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID
// and FENCED_INSTANCE_ID (a static member replaced by a newer instance)
// fence old members.

import (
	"context"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiSpec{key: 12, min: 0, max: 4, handle: (*Handlers).handleHeartbeat,
		actions: server.GroupAction(kmsg.ACLOperationRead, func(r kmsg.Request) string { return r.(*kmsg.HeartbeatRequest).Group })})
}

func (h *Handlers) handleHeartbeat(_ context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.HeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	if !rc.AuthorizedGroup(kmsg.ACLOperationRead, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	err := h.groups.Heartbeat(req.Group, req.MemberID, deref(req.InstanceID), req.Generation)
	resp.ErrorCode = errcode.Of(err)
	return resp, nil
}
