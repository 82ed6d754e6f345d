package kafkaapi

// EndTxn (key 26).
//
// The producer commits or aborts its transaction.
// The answer comes once PrepareCommit or PrepareAbort is replicated in
// __transaction_state; the coordinator then writes the markers and
// completes the transaction on its own (txns_markers.go), answering
// CONCURRENT_TRANSACTIONS to the producer's next requests meanwhile.
//
// Authorization, as Kafka: WRITE on the transactional id, else
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
//
// v5 is KIP-890 part 2's version, where the coordinator bumps the epoch
// at every EndTxn and answers the id and epoch for the next transaction.
// kbroker keeps transaction version 1 semantics (it does not advertise
// the transaction.version feature at 2, so clients stay at v4; franz-go
// and the Java client both do): a v5 request ends the transaction as v4
// does and a success answers the unchanged id and epoch, which is what a
// TV1 transaction keeps using.

import (
	"context"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiSpec{key: 26, min: 0, max: 5, handle: (*Handlers).handleEndTxn, actions: endTxnActions})
}

func endTxnActions(_ *server.RequestContext, kreq kmsg.Request) []server.Action {
	return []server.Action{txnIDAction(kreq.(*kmsg.EndTxnRequest).TransactionalID)}
}

func (h *Handlers) handleEndTxn(ctx context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	var err error
	if !rc.Authorized(kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, req.TransactionalID) {
		err = kerr.TransactionalIDAuthorizationFailed
	} else {
		err = h.txns.EndTxn(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit)
	}
	resp.ErrorCode = errcode.Of(fencedForVersion(err, req.Version, 2))
	if err == nil {
		resp.ProducerID, resp.ProducerEpoch = req.ProducerID, req.ProducerEpoch
	}
	return resp, nil
}
