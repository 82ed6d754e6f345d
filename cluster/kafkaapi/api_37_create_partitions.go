package kafkaapi

// CreatePartitions (key 37).
//
// Raises a topic's partition count to Count, placing the new partitions
// like CreateTopics does, or on the explicit assignment given; the
// controller commits the change through Raft. validateOnly checks without
// committing. A count not above the current one is INVALID_PARTITIONS.
//
// The partitions added spend the client's controller_mutation_rate,
// strictly from v3 (quotas_mutation.go).

import (
	"context"
	"time"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiSpec{key: 37, min: 0, max: 3, handle: (*Handlers).handleCreatePartitions})
}

func (h *Handlers) handleCreatePartitions(ctx context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	mq := rc.MutationQuota(3)
	if req.ValidateOnly {
		mq = nil
	}
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
		err := h.spendCreatePartitionsQuota(ctx, mq, t.Topic, t.Count, assignments)
		if err == nil {
			err = h.store.CreatePartitions(ctx, t.Topic, t.Count, assignments, req.ValidateOnly)
		}
		if err != nil {
			rt.ErrorCode = errcode.Of(err)
			rt.ErrorMessage = errcode.Message(err)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if !req.ValidateOnly {
		if err := h.replicas.Apply(h.store.Image()); err != nil {
			h.logger.Warn("opening new partitions", "err", err)
		}
	}
	return resp, nil
}

// spendCreatePartitionsQuota asks the mutation quota (nil: none) for the
// partitions a topic's change adds, once the controller has validated
// it, as Kafka asks only for a valid change; a client under no
// controller_mutation_rate makes no extra round trip. The error is the
// validation's or the quota's.
func (h *Handlers) spendCreatePartitionsQuota(ctx context.Context, mq *server.MutationQuota, topic string, count int32, assignments [][]int32) error {
	if mq == nil {
		return nil
	}
	if err := h.store.CreatePartitions(ctx, topic, count, assignments, true); err != nil {
		return err
	}
	t, ok := h.store.Image().Topics[topic]
	if !ok {
		return nil // deleted meanwhile: the commit fails on its own
	}
	return mq.Record(int(count) - len(t.Partitions))
}
