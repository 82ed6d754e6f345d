package kafkaapi

// DescribeTransactions (key 65).
//
// The coordinator's state of each
// transactional id (TRANSACTIONAL_ID_NOT_FOUND when it has none,
// NOT_COORDINATOR when another broker coordinates it).
//
// Authorization, as Kafka: DESCRIBE on each transactional id, else
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED for it.

import (
	"context"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiSpec{key: 65, min: 0, max: 0, handle: (*Handlers).handleDescribeTransactions, actions: describeTransactionsActions})
}

func describeTransactionsActions(_ *server.RequestContext, kreq kmsg.Request) []server.Action {
	var out []server.Action
	for _, id := range kreq.(*kmsg.DescribeTransactionsRequest).TransactionalIDs {
		out = append(out, server.Action{Operation: kmsg.ACLOperationDescribe, ResourceType: kmsg.ACLResourceTypeTransactionalId, Name: id})
	}
	return out
}

func (h *Handlers) handleDescribeTransactions(_ context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range req.TransactionalIDs {
		ts := kmsg.NewDescribeTransactionsResponseTransactionState()
		ts.TransactionalID = id
		ts.ProducerID, ts.ProducerEpoch, ts.StartTimestamp = -1, -1, -1
		if !rc.Authorized(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTransactionalId, id) {
			ts.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			resp.TransactionStates = append(resp.TransactionStates, ts)
			continue
		}
		m, err := h.txns.Describe(id)
		if err != nil {
			ts.ErrorCode = errcode.Of(err)
			resp.TransactionStates = append(resp.TransactionStates, ts)
			continue
		}
		ts.State = m.State.String()
		ts.TimeoutMillis = int32(m.Timeout.Milliseconds())
		if !m.Start.IsZero() {
			ts.StartTimestamp = m.Start.UnixMilli()
		}
		ts.ProducerID, ts.ProducerEpoch = m.ProducerID, m.ProducerEpoch
		var cur *kmsg.DescribeTransactionsResponseTransactionStateTopic
		for _, tp := range m.SortedPartitions() {
			if cur == nil || cur.Topic != tp.Topic {
				ts.Topics = append(ts.Topics, kmsg.NewDescribeTransactionsResponseTransactionStateTopic())
				cur = &ts.Topics[len(ts.Topics)-1]
				cur.Topic = tp.Topic
			}
			cur.Partitions = append(cur.Partitions, tp.Partition)
		}
		resp.TransactionStates = append(resp.TransactionStates, ts)
	}
	return resp, nil
}
