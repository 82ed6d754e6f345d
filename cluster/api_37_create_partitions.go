package cluster

// CreatePartitions (key 37).
//
// Raises a topic's partition count to Count, placing the new partitions
// like CreateTopics does, or on the explicit assignment given; the
// controller commits the change through Raft. validateOnly checks without
// committing. A count not above the current one is INVALID_PARTITIONS.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiSpec{key: 37, min: 0, max: 3, handle: (*Node).handleCreatePartitions})
}

func (n *Node) handleCreatePartitions(ctx context.Context, rc *RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, t := range req.Topics {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic = t.Topic
		if !rc.AuthorizedTopic(kmsg.ACLOperationAlter, t.Topic) {
			rt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		var assignments [][]int32
		for _, a := range t.Assignment {
			assignments = append(assignments, a.Replicas)
		}
		if err := n.store.CreatePartitions(ctx, t.Topic, t.Count, assignments, req.ValidateOnly); err != nil {
			rt.ErrorCode = errorCode(err)
			rt.ErrorMessage = errorMessage(err)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if !req.ValidateOnly {
		if err := n.replicas.Apply(n.store.Image()); err != nil {
			n.logger.Warn("opening new partitions", "err", err)
		}
	}
	return resp, nil
}
