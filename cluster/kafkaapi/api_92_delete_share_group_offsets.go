package kafkaapi

// DeleteShareGroupOffsets (key 92).
//
// KIP-932.
//
// Deletes the share-partition states of topics of an empty share group
// (NON_EMPTY_GROUP while it has members; GROUP_ID_NOT_FOUND for a group
// the coordinator does not know): a later member starts them over per
// share.auto.offset.reset. Served by the group's coordinator. Needs
// DELETE on the group (GROUP_AUTHORIZATION_FAILED) and READ on each
// topic (TOPIC_AUTHORIZATION_FAILED).

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
)

func init() {
	register(apiSpec{key: 92, min: 0, max: 0, handle: (*Handlers).handleDeleteShareGroupOffsets,
		actions: server.GroupAction(kmsg.ACLOperationDelete, func(r kmsg.Request) string { return r.(*kmsg.DeleteShareGroupOffsetsRequest).GroupID })})
}

func (h *Handlers) handleDeleteShareGroupOffsets(ctx context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DeleteShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if !rc.AuthorizedGroup(kmsg.ACLOperationDelete, req.GroupID) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	var topics []string
	denied := map[string]bool{}
	for _, t := range req.Topics {
		if !rc.AuthorizedTopic(kmsg.ACLOperationRead, t.Topic) {
			denied[t.Topic] = true
			continue
		}
		topics = append(topics, t.Topic)
	}
	res, err := h.shares.DeleteOffsets(ctx, req.GroupID, topics)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = errcode.Of(err), errcode.Message(err)
		return resp, nil
	}
	img := h.image()
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		rt.Topic = t.Topic
		if tp, ok := img.Topics[t.Topic]; ok {
			rt.TopicID = tp.ID
		}
		err := res[t.Topic]
		if denied[t.Topic] {
			err = kerr.TopicAuthorizationFailed
		}
		rt.ErrorCode, rt.ErrorMessage = errcode.Of(err), errcode.Message(err)
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
