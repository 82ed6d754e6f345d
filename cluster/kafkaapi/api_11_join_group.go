package kafkaapi

// JoinGroup (key 11).
//
// Served by the group's coordinator (the leader of its __consumer_offsets
// partition): NOT_COORDINATOR elsewhere, COORDINATOR_LOAD_IN_PROGRESS while
// the partition loads. The state machine is package group's: the
// MEMBER_ID_REQUIRED round from v4 (KIP-394), static members from v5
// (KIP-345; SkipAssignment for a rejoining static leader in v9), protocol
// selection by vote, session and rebalance timeouts, and
// group.initial.rebalance.delay.ms for the first rebalance of an empty
// group. The response is sent when the join phase completes (the handler
// returns nil and the group responds later).

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/group"
	"github.com/kbroker/kbroker/cluster/server"
)

func init() {
	register(apiSpec{key: 11, min: 0, max: 9, handle: (*Handlers).handleJoinGroup,
		actions: server.GroupAction(kmsg.ACLOperationRead, func(r kmsg.Request) string { return r.(*kmsg.JoinGroupRequest).Group })})
}

func (h *Handlers) handleJoinGroup(_ context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.JoinGroupRequest)
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	respond := func(r group.JoinResult) {
		resp.ErrorCode = errcode.Of(r.Err)
		resp.Generation = r.Generation
		resp.MemberID = r.MemberID
		resp.LeaderID = r.LeaderID
		resp.SkipAssignment = r.SkipAssignment
		if r.Protocol != "" || req.Version < 7 {
			p := r.Protocol
			resp.Protocol = &p
		}
		if r.ProtocolType != "" {
			pt := r.ProtocolType
			resp.ProtocolType = &pt
		}
		for _, m := range r.Members {
			rm := kmsg.NewJoinGroupResponseMember()
			rm.MemberID = m.MemberID
			if m.InstanceID != "" {
				id := m.InstanceID
				rm.InstanceID = &id
			}
			rm.ProtocolMetadata = m.Metadata
			resp.Members = append(resp.Members, rm)
		}
		rc.Respond(resp)
	}
	if !rc.AuthorizedGroup(kmsg.ACLOperationRead, req.Group) {
		respond(group.JoinResult{Err: kerr.GroupAuthorizationFailed})
		return nil, nil
	}
	jr := group.JoinRequest{
		MemberID:             req.MemberID,
		ClientID:             deref(rc.Header.ClientID),
		ClientHost:           clientHost(rc),
		ProtocolType:         req.ProtocolType,
		SessionTimeout:       time.Duration(req.SessionTimeoutMillis) * time.Millisecond,
		RebalanceTimeout:     time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond,
		RequireKnownMemberID: req.Version >= 4,
	}
	if req.Version == 0 {
		jr.RebalanceTimeout = jr.SessionTimeout
	}
	if req.InstanceID != nil {
		jr.InstanceID = *req.InstanceID
	}
	for _, p := range req.Protocols {
		jr.Protocols = append(jr.Protocols, group.Protocol{Name: p.Name, Metadata: p.Metadata})
	}
	h.groups.Join(req.Group, jr, respond)
	return nil, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
