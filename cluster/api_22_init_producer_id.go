package cluster

// InitProducerId (key 22).
//
// An idempotent producer (no transactional id) gets a fresh producer id
// with epoch 0, as Kafka's transaction coordinator does for it; ids come
// from blocks the controller allocates through Raft, so they are unique
// across brokers and restarts. A transactional id needs WRITE on it, else
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED; transactions are not supported,
// so it is always denied (see noTransactions).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiSpec{key: 22, min: 0, max: 4, handle: (*Node).handleInitProducerID})
}

func (n *Node) handleInitProducerID(ctx context.Context, rc *RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if id := req.TransactionalID; id != nil {
		if !rc.Authorized(kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, *id) {
			resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		} else {
			// Not reached while noTransactions denies every transactional
			// id: there is no transaction coordinator.
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		}
		return resp, nil
	}
	// An idempotent producer needs IDEMPOTENT_WRITE on the cluster or,
	// since Kafka 3.0, WRITE on some topic.
	if !rc.AuthorizedCluster(kmsg.ACLOperationIdempotentWrite) && !rc.AuthorizedAny(kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
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
