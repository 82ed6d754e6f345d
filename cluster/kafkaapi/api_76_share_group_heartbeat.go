package kafkaapi

// ShareGroupHeartbeat (key 76).
//
// KIP-932.
//
// A member of a share group joins (epoch 0, naming its topics),
// heartbeats with its epoch (its topics only when they change), and
// leaves (epoch -1). The answer carries its epoch and, when it changed,
// its assignment by topic id: several members may share a partition
// (package share). An epoch other than the member's current or previous
// one is FENCED_MEMBER_EPOCH; a member the coordinator does not know,
// UNKNOWN_MEMBER_ID; a join without topics, an empty member id or group
// id, INVALID_REQUEST; an id of a classic or consumer group,
// GROUP_ID_NOT_FOUND ("not a share group"), as Kafka answers.
//
// Needs READ on the group (GROUP_AUTHORIZATION_FAILED) and DESCRIBE on
// each subscribed topic (TOPIC_AUTHORIZATION_FAILED).

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/cluster/share"
)

func init() {
	register(apiSpec{key: 76, min: 1, max: 1, handle: (*Handlers).handleShareGroupHeartbeat,
		actions: server.GroupAction(kmsg.ACLOperationRead, func(r kmsg.Request) string { return r.(*kmsg.ShareGroupHeartbeatRequest).GroupID })})
}

func (h *Handlers) handleShareGroupHeartbeat(_ context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ShareGroupHeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	fail := func(err error) (kmsg.Response, error) {
		resp.ErrorCode, resp.ErrorMessage = errcode.Of(err), errcode.Message(err)
		return resp, nil
	}
	if !rc.AuthorizedGroup(kmsg.ACLOperationRead, req.GroupID) {
		return fail(kerr.GroupAuthorizationFailed)
	}
	for _, t := range req.SubscribedTopicNames {
		if !rc.AuthorizedTopic(kmsg.ACLOperationDescribe, t) {
			return fail(kerr.TopicAuthorizationFailed)
		}
	}
	switch {
	case req.GroupID == "":
		return fail(fmt.Errorf("%w: the group id is empty", kerr.InvalidRequest))
	case req.MemberID == "":
		return fail(fmt.Errorf("%w: the member id is empty", kerr.InvalidRequest))
	case req.MemberEpoch < share.LeaveEpoch:
		return fail(fmt.Errorf("%w: member epoch %d", kerr.InvalidRequest, req.MemberEpoch))
	case h.otherGroupType(req.GroupID):
		return fail(fmt.Errorf("%w: group %s is not a share group", kerr.GroupIDNotFound, req.GroupID))
	}
	hb := share.Heartbeat{
		MemberID:    req.MemberID,
		MemberEpoch: req.MemberEpoch,
		Topics:      req.SubscribedTopicNames,
		RackID:      req.RackID,
		ClientID:    deref(rc.Header.ClientID),
		ClientHost:  clientHost(rc),
	}
	ans, err := h.shares.Heartbeat(req.GroupID, hb)
	if err != nil {
		return fail(err)
	}
	id := req.MemberID
	resp.MemberID = &id
	resp.MemberEpoch = ans.MemberEpoch
	resp.HeartbeatIntervalMillis = int32(ans.Interval.Milliseconds())
	if ans.Assignment != nil {
		img := h.image()
		a := kmsg.NewShareGroupHeartbeatResponseAssignment()
		for _, name := range slices.Sorted(maps.Keys(ans.Assignment)) {
			t, ok := img.Topics[name]
			if !ok || len(ans.Assignment[name]) == 0 {
				continue
			}
			tp := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
			tp.TopicID, tp.Partitions = t.ID, slices.Clone(ans.Assignment[name])
			a.TopicPartitions = append(a.TopicPartitions, tp)
		}
		resp.Assignment = &a
	}
	return resp, nil
}
