package cluster

// InitProducerId (key 22), v0–4.
//
// An idempotent producer (no transactional id) gets a fresh producer id
// with epoch 0, as Kafka's transaction coordinator does for it; ids come
// from blocks the controller allocates through Raft, so they are unique
// across brokers and restarts. Transactions are not supported: a
// transactional id gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (n *Node) handleInitProducerID(ctx context.Context, _ *RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp, nil
	}
	id, err := n.producerIDs.allocate(ctx)
	if err != nil {
		n.logger.Warn("allocating producer id", "err", err)
		// Retriable: the client tries again once a controller is back.
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp, nil
}
