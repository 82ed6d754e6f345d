package kafkaapi

// ConsumerGroupHeartbeat (key 68).
//
// A member of a consumer group joins (epoch 0), heartbeats with its epoch
// and owned partitions, and leaves (epoch -1; -2 for a static member that
// will come back). The coordinator reconciles it towards its target
// assignment (groups_consumer.go, group/consumer.go). v0: an empty member
// id at epoch 0 gets one from the coordinator; v1: the client makes its
// own id, and may subscribe by regular expression (Go's RE2 syntax, the
// same family as Kafka's RE2/J, matched against whole topic names).
//
// Needs READ on the group (GROUP_AUTHORIZATION_FAILED) and DESCRIBE on
// each subscribed topic named (TOPIC_AUTHORIZATION_FAILED). With
// group.version finalized below 1 the protocol is off, as in Kafka:
// UNSUPPORTED_VERSION, and clients fall back to the classic protocol.

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/group"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/metadata/features"
)

func init() {
	register(apiSpec{key: 68, min: 0, max: 1, handle: (*Handlers).handleConsumerGroupHeartbeat,
		actions: server.GroupAction(kmsg.ACLOperationRead, func(r kmsg.Request) string { return r.(*kmsg.ConsumerGroupHeartbeatRequest).Group })})
}

func (h *Handlers) handleConsumerGroupHeartbeat(_ context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ConsumerGroupHeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	fail := func(err error) (kmsg.Response, error) {
		resp.ErrorCode, resp.ErrorMessage = errcode.Of(err), groupErrorMessage(err)
		return resp, nil
	}
	if !rc.AuthorizedGroup(kmsg.ACLOperationRead, req.Group) {
		return fail(kerr.GroupAuthorizationFailed)
	}
	if h.store.Image().FeatureLevel(features.GroupVersion) < 1 {
		return fail(fmt.Errorf("%w: group.version is finalized below 1: the consumer group protocol (KIP-848) is off", kerr.UnsupportedVersion))
	}
	for _, t := range req.SubscribedTopicNames {
		if !rc.AuthorizedTopic(kmsg.ACLOperationDescribe, t) {
			return fail(kerr.TopicAuthorizationFailed)
		}
	}
	hb := group.ConsumerHeartbeat{
		MemberID:         req.MemberID,
		MemberEpoch:      req.MemberEpoch,
		InstanceID:       req.InstanceID,
		RackID:           req.RackID,
		RebalanceTimeout: time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond,
		ClientID:         deref(rc.Header.ClientID),
		ClientHost:       clientHost(rc),
		SubscribedTopics: req.SubscribedTopicNames,
		SubscribedRegex:  req.SubscribedTopicRegex,
		ServerAssignor:   req.ServerAssignor,
	}
	if req.RebalanceTimeoutMillis < 0 {
		hb.RebalanceTimeout = -1
	}
	if req.Version == 0 && req.MemberEpoch == 0 && req.MemberID == "" {
		hb.MemberID = newMemberUUID()
	}
	if req.Topics != nil {
		hb.Owned = group.Assignment{}
		for _, t := range req.Topics {
			ps := slices.Sorted(slices.Values(t.Partitions))
			hb.Owned[t.TopicID] = slices.Compact(append(hb.Owned[t.TopicID], ps...))
		}
	}
	h.groups.ConsumerHeartbeat(req.Group, hb, func(res group.ConsumerResult, interval time.Duration, err error) {
		if err != nil {
			resp.ErrorCode, resp.ErrorMessage = errcode.Of(err), groupErrorMessage(err)
			rc.Respond(resp)
			return
		}
		id := res.MemberID
		resp.MemberID = &id
		resp.MemberEpoch = res.MemberEpoch
		resp.HeartbeatIntervalMillis = int32(interval.Milliseconds())
		if res.Assignment != nil {
			a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
			for tid, ps := range res.Assignment {
				if len(ps) == 0 {
					continue
				}
				t := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
				t.TopicID, t.Partitions = tid, ps
				a.Topics = append(a.Topics, t)
			}
			resp.Assignment = &a
		}
		rc.Respond(resp)
	})
	return nil, nil
}

// newMemberUUID is a member id as Kafka makes them: a random UUID in URL
// safe base64.
func newMemberUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return base64.RawURLEncoding.EncodeToString(b[:])
}
