package kafkaapi

// OffsetCommit (key 8).
//
// Offsets are written to the group's __consumer_offsets partition (one
// batch per request, OffsetCommitKey v1 / OffsetCommitValue v3) and the
// response is sent once the batch is replicated, with errors per
// partition as Kafka maps them: NOT_COORDINATOR when leadership moved,
// COORDINATOR_NOT_AVAILABLE when the ISR is too small or replication timed
// out (offsets.commit.timeout.ms, 5s). Members of a group commit with
// their generation and member id (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
// FENCED_INSTANCE_ID, REBALANCE_IN_PROGRESS otherwise); a simple consumer
// (generation -1, no member id) may commit to a group without members,
// which is created Empty if needed. The retention time of v2–4 is ignored
// (as Kafka 4 does); metadata longer than offset.metadata.max.bytes (4096)
// is OFFSET_METADATA_TOO_LARGE.
//
// v9 carries the member epoch of a consumer (KIP-848) group member, which
// must be its current one (STALE_MEMBER_EPOCH); such a member may not
// commit with an older version (UNSUPPORTED_VERSION). v10 names topics by
// id (UNKNOWN_TOPIC_ID for an id the metadata does not know).
//
// Needs READ on the group (GROUP_AUTHORIZATION_FAILED for every
// partition) and READ on each topic (TOPIC_AUTHORIZATION_FAILED for its
// partitions, which are not committed).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/group"
	"github.com/kbroker/kbroker/cluster/groupcoord"
	"github.com/kbroker/kbroker/cluster/server"
)

func init() {
	register(apiSpec{key: 8, min: 2, max: 10, handle: (*Handlers).handleOffsetCommit, actions: offsetCommitActions})
}

func offsetCommitActions(_ *server.RequestContext, kreq kmsg.Request) []server.Action {
	req := kreq.(*kmsg.OffsetCommitRequest)
	return append(server.TopicActions(kmsg.ACLOperationRead, func(yield func(string)) {
		for _, t := range req.Topics {
			yield(t.Topic)
		}
	}), server.Action{Operation: kmsg.ACLOperationRead, ResourceType: kmsg.ACLResourceTypeGroup, Name: req.Group})
}

func (h *Handlers) handleOffsetCommit(_ context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.OffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	groupAllowed := rc.AuthorizedGroup(kmsg.ACLOperationRead, req.Group)
	// v10 names topics by id: an unknown id is UNKNOWN_TOPIC_ID.
	var unknownID map[int]bool
	if req.Version >= 10 {
		img := h.store.Image()
		unknownID = map[int]bool{}
		for i := range req.Topics {
			if t, ok := img.TopicsByID[req.Topics[i].TopicID]; ok {
				req.Topics[i].Topic = t.Name
			} else {
				unknownID[i] = true
			}
		}
	}
	var offsets []groupcoord.PartitionOffset
	// refused marks the partitions answered without committing them.
	var refused []bool
	for ti, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		topicAllowed := !unknownID[ti] && rc.AuthorizedTopic(kmsg.ACLOperationRead, t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			switch {
			case !groupAllowed:
				rp.ErrorCode = kerr.GroupAuthorizationFailed.Code
			case unknownID[ti]:
				rp.ErrorCode = kerr.UnknownTopicID.Code
			case !topicAllowed:
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			}
			rt.Partitions = append(rt.Partitions, rp)
			refused = append(refused, rp.ErrorCode != 0)
			if rp.ErrorCode != 0 {
				continue
			}
			po := groupcoord.PartitionOffset{
				TP:          group.TopicPartition{Topic: t.Topic, Partition: p.Partition},
				Offset:      p.Offset,
				LeaderEpoch: -1,
				Metadata:    deref(p.Metadata),
			}
			if req.Version >= 6 {
				po.LeaderEpoch = p.LeaderEpoch
			}
			offsets = append(offsets, po)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if !groupAllowed || (len(offsets) == 0 && len(refused) > 0) {
		return resp, nil
	}
	by := groupcoord.CommitMember{MemberID: req.MemberID, InstanceID: deref(req.InstanceID), Generation: req.Generation, Version: req.Version}
	h.groups.CommitOffsets(req.Group, by, offsets, func(errs []error) {
		i, k := 0, 0
		for ti := range resp.Topics {
			ps := resp.Topics[ti].Partitions
			for pi := range ps {
				if !refused[k] {
					ps[pi].ErrorCode = errcode.Of(errs[i])
					i++
				}
				k++
			}
		}
		rc.Respond(resp)
	})
	return nil, nil
}
