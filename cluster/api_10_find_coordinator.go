package cluster

// FindCoordinator (key 10), v0–6, both the single-key (v0–3) and the
// batched (v4+) layouts.
//
// Group keys (key type 0): the coordinator is the leader of the group's
// partition of __consumer_offsets (abs(javaHashCode(group)) % partitions),
// answered with its endpoint on the listener the request came in on. The
// first lookup creates the topic through the controller
// (offsets.topic.num.partitions, offsets.topic.replication.factor capped
// at the live brokers when the cluster is smaller); while the topic or a
// leader is missing the answer is COORDINATOR_NOT_AVAILABLE and clients
// retry.
//
// Transactions are not supported: a transactional key (type 1) gets
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, which clients report at once
// instead of retrying (as InitProducerId and Produce do for a
// transactional id). Any other key type is INVALID_REQUEST.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (n *Node) handleFindCoordinator(ctx context.Context, rc *RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	find := func(key string) (int32, string, int32, error) {
		switch req.CoordinatorType {
		case 0:
		case 1:
			return -1, "", -1, kerr.TransactionalIDAuthorizationFailed
		default:
			return -1, "", -1, kerr.InvalidRequest
		}
		if key == "" {
			return -1, "", -1, kerr.InvalidRequest
		}
		id, ep, err := n.groups.coordinatorFor(ctx, key, rc.Listener)
		if err != nil {
			return -1, "", -1, err
		}
		return id, ep.Host, ep.Port, nil
	}
	if req.Version < 4 {
		id, host, port, err := find(req.CoordinatorKey)
		resp.ErrorCode = errorCode(err)
		resp.NodeID, resp.Host, resp.Port = id, host, port
		if err != nil && req.Version >= 1 {
			resp.ErrorMessage = errorMessage(err)
		}
		return resp, nil
	}
	for _, key := range req.CoordinatorKeys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key = key
		id, host, port, err := find(key)
		c.ErrorCode = errorCode(err)
		c.NodeID, c.Host, c.Port = id, host, port
		if err != nil {
			c.ErrorMessage = errorMessage(err)
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	return resp, nil
}
