package kafkaapi

// AddOffsetsToTxn (key 25).
//
// The producer will commit offsets of a
// group in its transaction (TxnOffsetCommit); the coordinator adds the
// group's partition of __consumer_offsets to the transaction, so its
// marker commits or drops those offsets.
//
// Authorization, as Kafka: WRITE on the transactional id (else
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED), READ on the group (else
// GROUP_AUTHORIZATION_FAILED). v4 only allows TRANSACTION_ABORTABLE,
// which kbroker does not return.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/groupcoord"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/cluster/txn"
)

func init() {
	register(apiSpec{key: 25, min: 0, max: 4, handle: (*Handlers).handleAddOffsetsToTxn, actions: addOffsetsToTxnActions})
}

func addOffsetsToTxnActions(_ *server.RequestContext, kreq kmsg.Request) []server.Action {
	req := kreq.(*kmsg.AddOffsetsToTxnRequest)
	return []server.Action{txnIDAction(req.TransactionalID),
		{Operation: kmsg.ACLOperationRead, ResourceType: kmsg.ACLResourceTypeGroup, Name: req.Group}}
}

func (h *Handlers) handleAddOffsetsToTxn(ctx context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.AddOffsetsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	var err error
	switch {
	case !rc.Authorized(kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, req.TransactionalID):
		err = kerr.TransactionalIDAuthorizationFailed
	case !rc.Authorized(kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, req.Group):
		err = kerr.GroupAuthorizationFailed
	case req.Group == "":
		err = kerr.InvalidGroupID
	default:
		// The group's partition exists only once __consumer_offsets does.
		if err = h.groups.Topic().Ensure(ctx); err != nil {
			h.logger.Warn("adding offsets to transaction", "group", req.Group, "err", err)
			err = kerr.CoordinatorNotAvailable
			break
		}
		tp := txn.TopicPartition{Topic: groupcoord.OffsetsTopic, Partition: h.groups.PartitionFor(req.Group)}
		err = h.txns.AddPartitions(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, []txn.TopicPartition{tp})
	}
	resp.ErrorCode = errcode.Of(fencedForVersion(err, req.Version, 2))
	return resp, nil
}
