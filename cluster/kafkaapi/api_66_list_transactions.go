package kafkaapi

// ListTransactions (key 66).
//
// The transactions this broker
// coordinates, filtered by state, producer id and (v1) how long they have
// been running, and (v2, KIP-1152) whose transactional id matches
// TransactionalIDPattern as a whole: RE2 syntax, which is Kafka's (RE2/J)
// and Go's; a pattern that does not compile is INVALID_REGULAR_EXPRESSION.
// Unknown state names are echoed in UnknownStateFilters and select
// nothing, as Kafka.
//
// Authorization, as Kafka: only transactional ids the principal may
// DESCRIBE are listed.

import (
	"context"
	"regexp"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/cluster/txn"
	"github.com/kbroker/kbroker/cluster/txncoord"
)

func init() {
	register(apiSpec{key: 66, min: 0, max: 2, handle: (*Handlers).handleListTransactions})
}

// txnStateByName is the inverse of txn.State.String.
var txnStateByName = func() map[string]txn.State {
	m := map[string]txn.State{}
	for s := txn.Empty; s <= txn.PrepareEpochFence; s++ {
		m[s.String()] = s
	}
	return m
}()

func (h *Handlers) handleListTransactions(_ context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ListTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	f := txncoord.ListFilter{States: map[txn.State]bool{}, ProducerIDs: map[int64]bool{}, MinDuration: -1}
	for _, name := range req.StateFilters {
		s, ok := txnStateByName[name]
		if !ok {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
			continue
		}
		f.States[s] = true
	}
	if len(req.StateFilters) > 0 && len(f.States) == 0 {
		return resp, nil // only unknown states: nothing matches
	}
	for _, id := range req.ProducerIDFilters {
		f.ProducerIDs[id] = true
	}
	var idPattern *regexp.Regexp
	if req.Version >= 2 && req.TransactionalIDPattern != nil && *req.TransactionalIDPattern != "" {
		var err error
		if idPattern, err = regexp.Compile("^(?:" + *req.TransactionalIDPattern + ")$"); err != nil {
			resp.ErrorCode = kerr.InvalidRegularExpression.Code
			return resp, nil
		}
	}
	if req.Version >= 1 && req.DurationFilterMillis >= 0 {
		f.MinDuration = time.Duration(req.DurationFilterMillis) * time.Millisecond
	}
	txns, err := h.txns.List(f, time.Now())
	if err != nil {
		resp.ErrorCode = errcode.Of(err)
		return resp, nil
	}
	sort.Slice(txns, func(i, j int) bool { return txns[i].TransactionalID < txns[j].TransactionalID })
	for _, m := range txns {
		if idPattern != nil && !idPattern.MatchString(m.TransactionalID) ||
			!rc.Authorized(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTransactionalId, m.TransactionalID) {
			continue
		}
		ts := kmsg.NewListTransactionsResponseTransactionState()
		ts.TransactionalID, ts.ProducerID, ts.TransactionState = m.TransactionalID, m.ProducerID, m.State.String()
		resp.TransactionStates = append(resp.TransactionStates, ts)
	}
	return resp, nil
}
