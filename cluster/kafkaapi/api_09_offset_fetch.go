package kafkaapi

// OffsetFetch (key 9).
//
// Both layouts: one group (v1–7, topics or all with a null topic list
// from v2) and a batch of groups (v8+).
//
// Answers the committed offsets the coordinator holds (replicated ones
// only); a partition without one gets offset -1. A group this broker does
// not coordinate is NOT_COORDINATOR (COORDINATOR_LOAD_IN_PROGRESS while its
// partition loads): at the top level from v2, per partition in v1. With
// RequireStable (v7+, KIP-447), a partition whose offset a transaction
// holds, not yet committed by its marker, is UNSTABLE_OFFSET_COMMIT and
// the client asks again (groups_txn_offsets.go). v9 carries the member id
// and epoch of a consumer (KIP-848) group member, checked as Kafka does
// (STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID); v10 names topics by id
// (UNKNOWN_TOPIC_ID for an unknown one; offsets of a deleted topic are
// left out of an all-topics answer, having no id).

import (
	"context"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/groupcoord"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiSpec{key: 9, min: 1, max: 10, handle: (*Handlers).handleOffsetFetch})
}

// fetchOffsetsAuthorized is the coordinator's fetchOffsets behind
// Kafka's checks: DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED), and
// DESCRIBE on each topic: a requested topic the principal may not
// describe gets TOPIC_AUTHORIZATION_FAILED for its partitions, and when
// all topics are asked for such topics are left out.
func (h *Handlers) fetchOffsetsAuthorized(rc *server.RequestContext, groupID string, topics map[string][]int32, order []string) ([]groupcoord.FetchedTopic, error) {
	if !rc.AuthorizedGroup(kmsg.ACLOperationDescribe, groupID) {
		return nil, kerr.GroupAuthorizationFailed
	}
	got, err := h.groups.FetchOffsets(groupID, topics, order)
	if err != nil {
		return got, err
	}
	out := got[:0]
	for _, ft := range got {
		if !rc.AuthorizedTopic(kmsg.ACLOperationDescribe, ft.Topic) {
			if topics == nil {
				continue
			}
			ps := make([]groupcoord.FetchedOffset, len(ft.Partitions))
			for i, fo := range ft.Partitions {
				ps[i] = groupcoord.FetchedOffset{Partition: fo.Partition, Err: kerr.TopicAuthorizationFailed}
				ps[i].Offset.Offset, ps[i].Offset.LeaderEpoch = -1, -1
			}
			ft.Partitions = ps
		}
		out = append(out, ft)
	}
	return out, nil
}

func (h *Handlers) handleOffsetFetch(_ context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.OffsetFetchRequest)
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if req.Version >= 8 {
		img := h.store.Image()
		for _, rg := range req.Groups {
			var topics map[string][]int32
			var order []string
			// v10 names topics by id; unknown ids are answered
			// UNKNOWN_TOPIC_ID.
			var unknown []kmsg.OffsetFetchRequestGroupTopic
			if rg.Topics != nil {
				topics = map[string][]int32{}
				for _, t := range rg.Topics {
					if req.Version >= 10 {
						it, ok := img.TopicsByID[t.TopicID]
						if !ok {
							unknown = append(unknown, t)
							continue
						}
						t.Topic = it.Name
					}
					if _, ok := topics[t.Topic]; !ok {
						order = append(order, t.Topic)
					}
					topics[t.Topic] = append(topics[t.Topic], t.Partitions...)
				}
			}
			got, err := h.fetchOffsetsAuthorized(rc, rg.Group, topics, order)
			if err == nil && req.Version >= 9 {
				if err = h.groups.ValidateFetchMember(rg.Group, deref(rg.MemberID), rg.MemberEpoch); err != nil {
					got = nil
				}
			}
			if req.RequireStable {
				h.groups.MarkUnstable(rg.Group, got)
			}
			out := kmsg.NewOffsetFetchResponseGroup()
			out.Group = rg.Group
			out.ErrorCode = errcode.Of(err)
			for _, ft := range got {
				rt := kmsg.NewOffsetFetchResponseGroupTopic()
				rt.Topic = ft.Topic
				if req.Version >= 10 {
					it, ok := img.Topics[ft.Topic]
					if !ok {
						// Offsets of a deleted topic have no id to
						// name them by.
						continue
					}
					rt.TopicID = it.ID
				}
				for _, fo := range ft.Partitions {
					rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					rp.Partition = fo.Partition
					rp.Offset = fo.Offset.Offset
					rp.LeaderEpoch = fo.Offset.LeaderEpoch
					md := fo.Offset.Metadata
					rp.Metadata = &md
					rp.ErrorCode = errcode.Of(fo.Err)
					rt.Partitions = append(rt.Partitions, rp)
				}
				out.Topics = append(out.Topics, rt)
			}
			if err == nil {
				for _, t := range unknown {
					rt := kmsg.NewOffsetFetchResponseGroupTopic()
					rt.TopicID = t.TopicID
					for _, p := range t.Partitions {
						rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
						rp.Partition, rp.Offset, rp.LeaderEpoch = p, -1, -1
						rp.ErrorCode = kerr.UnknownTopicID.Code
						rt.Partitions = append(rt.Partitions, rp)
					}
					out.Topics = append(out.Topics, rt)
				}
			}
			resp.Groups = append(resp.Groups, out)
		}
		return resp, nil
	}

	var topics map[string][]int32
	var order []string
	if req.Topics != nil || req.Version < 2 {
		topics = map[string][]int32{}
		for _, t := range req.Topics {
			if _, ok := topics[t.Topic]; !ok {
				order = append(order, t.Topic)
			}
			topics[t.Topic] = append(topics[t.Topic], t.Partitions...)
		}
	}
	got, err := h.fetchOffsetsAuthorized(rc, req.Group, topics, order)
	if req.Version >= 7 && req.RequireStable {
		h.groups.MarkUnstable(req.Group, got)
	}
	if err != nil && req.Version < 2 {
		// v1 has no top-level error: every partition carries it.
		for _, t := range req.Topics {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition = p
				rp.Offset = -1
				rp.ErrorCode = errcode.Of(err)
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	resp.ErrorCode = errcode.Of(err)
	for _, ft := range got {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = ft.Topic
		for _, fo := range ft.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition = fo.Partition
			rp.Offset = fo.Offset.Offset
			rp.LeaderEpoch = fo.Offset.LeaderEpoch
			md := fo.Offset.Metadata
			rp.Metadata = &md
			rp.ErrorCode = errcode.Of(fo.Err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
