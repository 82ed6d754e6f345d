package kafkaapi

// AlterShareGroupOffsets (key 91).
//
// KIP-932.
//
// Sets the start offset of share-partitions of an empty share group
// (NON_EMPTY_GROUP while it has members; the group is created if it
// does not exist): each starts over there, nothing in flight, with a new
// state epoch that fences its leader's state. Served by the group's
// coordinator. Needs READ on the group (GROUP_AUTHORIZATION_FAILED) and
// on each topic (TOPIC_AUTHORIZATION_FAILED).

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
)

func init() {
	register(apiSpec{key: 91, min: 0, max: 0, handle: (*Handlers).handleAlterShareGroupOffsets,
		actions: server.GroupAction(kmsg.ACLOperationRead, func(r kmsg.Request) string { return r.(*kmsg.AlterShareGroupOffsetsRequest).GroupID })})
}

func (h *Handlers) handleAlterShareGroupOffsets(ctx context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.AlterShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	partErr := func(err error) {
		for _, t := range req.Topics {
			rt := kmsg.NewAlterShareGroupOffsetsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
				rp.Partition = p.Partition
				rp.ErrorCode, rp.ErrorMessage = errcode.Of(err), errcode.Message(err)
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
	}
	fail := func(err error) (kmsg.Response, error) {
		resp.ErrorCode, resp.ErrorMessage = errcode.Of(err), errcode.Message(err)
		partErr(err)
		return resp, nil
	}
	if !rc.AuthorizedGroup(kmsg.ACLOperationRead, req.GroupID) {
		return fail(kerr.GroupAuthorizationFailed)
	}
	if h.otherGroupType(req.GroupID) {
		return fail(fmt.Errorf("%w: group %s is not a share group", kerr.GroupIDNotFound, req.GroupID))
	}
	offsets := map[string]map[int32]int64{}
	denied := map[string]bool{}
	for _, t := range req.Topics {
		if !rc.AuthorizedTopic(kmsg.ACLOperationRead, t.Topic) {
			denied[t.Topic] = true
			continue
		}
		if offsets[t.Topic] == nil {
			offsets[t.Topic] = map[int32]int64{}
		}
		for _, p := range t.Partitions {
			offsets[t.Topic][p.Partition] = p.StartOffset
		}
	}
	res, err := h.shares.AlterOffsets(ctx, req.GroupID, offsets)
	if err != nil {
		return fail(err)
	}
	img := h.image()
	for _, t := range req.Topics {
		rt := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		rt.Topic = t.Topic
		if tp, ok := img.Topics[t.Topic]; ok {
			rt.TopicID = tp.ID
		}
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			err := res[t.Topic][p.Partition]
			if denied[t.Topic] {
				err = kerr.TopicAuthorizationFailed
			}
			rp.ErrorCode, rp.ErrorMessage = errcode.Of(err), errcode.Message(err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
