package kafkaapi

// InitProducerId (key 22).
//
// An idempotent producer (no transactional id) gets a fresh producer id
// with epoch 0, as Kafka's transaction coordinator does for it; ids come
// from blocks the controller allocates through Raft, so they are unique
// across brokers and restarts. A transactional id needs WRITE on it, else
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, and goes to the transaction
// coordinator (txns_ops.go): the id's producer id with its epoch bumped,
// which fences the previous incarnation; an open transaction of that
// incarnation is aborted first (CONCURRENT_TRANSACTIONS until done). A
// timeout above transaction.max.timeout.ms is INVALID_TRANSACTION_TIMEOUT;
// PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v4. v5 only allows
// TRANSACTION_ABORTABLE (KIP-890), which kbroker does not return.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/cluster/txn"
)

func init() {
	register(apiSpec{key: 22, min: 0, max: 5, handle: (*Handlers).handleInitProducerID})
}

func (h *Handlers) handleInitProducerID(ctx context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if id := req.TransactionalID; id != nil {
		if !rc.Authorized(kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, *id) {
			resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		} else {
			h.initTransactionalProducerID(ctx, req, resp)
		}
		return resp, nil
	}
	// An idempotent producer needs IDEMPOTENT_WRITE on the cluster or,
	// since Kafka 3.0, WRITE on some topic.
	if !rc.AuthorizedCluster(kmsg.ACLOperationIdempotentWrite) && !rc.AuthorizedAny(kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	id, err := h.producerIDs.Allocate(ctx)
	if err != nil {
		h.logger.Warn("allocating producer id", "err", err)
		// Retriable: the client tries again once a controller is back.
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp, nil
}

func (h *Handlers) initTransactionalProducerID(ctx context.Context, req *kmsg.InitProducerIDRequest, resp *kmsg.InitProducerIDResponse) {
	if *req.TransactionalID == "" {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return
	}
	ireq := txn.InitRequest{
		TransactionalID: *req.TransactionalID,
		Timeout:         time.Duration(req.TransactionTimeoutMillis) * time.Millisecond,
		ProducerID:      txn.NoProducerID, ProducerEpoch: txn.NoEpoch,
	}
	if req.Version >= 3 {
		ireq.ProducerID, ireq.ProducerEpoch = req.ProducerID, req.ProducerEpoch
	}
	id, epoch, err := h.txns.InitProducerID(ctx, ireq)
	if err != nil {
		resp.ErrorCode = errcode.Of(fencedForVersion(err, req.Version, 4))
		return
	}
	resp.ProducerID, resp.ProducerEpoch = id, epoch
}
