package kafkaapi

// FindCoordinator (key 10).
//
// Both layouts: a single key (v0–3) and a batch of keys (v4+).
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
// Authorization, as Kafka: DESCRIBE on the group (else
// GROUP_AUTHORIZATION_FAILED) or on the transactional id (else
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED). Any other key type is
// INVALID_REQUEST.
//
// Transactional keys (key type 1): the leader of the id's partition of
// __transaction_state, created on the first lookup in the same way
// (transaction.state.log.* keys, internal_topic.go).
//
// Share keys (key type 2, KIP-932), group:topicId:partition (anything
// else is INVALID_REQUEST): the leader of the key's partition of
// __share_group_state, for brokers (CLUSTER_ACTION on the cluster, else
// CLUSTER_AUTHORIZATION_FAILED). Share groups themselves use group keys.

import (
	"context"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiSpec{key: 10, min: 0, max: 6, handle: (*Handlers).handleFindCoordinator, actions: findCoordinatorActions})
}

// coordinatorResource is the resource a FindCoordinator key type names.
func coordinatorResource(keyType int8) (kmsg.ACLResourceType, bool) {
	switch keyType {
	case 0:
		return kmsg.ACLResourceTypeGroup, true
	case 1:
		return kmsg.ACLResourceTypeTransactionalId, true
	case 2:
		return kmsg.ACLResourceTypeCluster, true
	}
	return 0, false
}

// findCoordinatorActions declares DESCRIBE on every key.
func findCoordinatorActions(_ *server.RequestContext, kreq kmsg.Request) []server.Action {
	req := kreq.(*kmsg.FindCoordinatorRequest)
	rt, ok := coordinatorResource(req.CoordinatorType)
	if !ok || rt == kmsg.ACLResourceTypeCluster {
		return nil // share keys: CLUSTER_ACTION, asked by the handler
	}
	keys := req.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	out := make([]server.Action, 0, len(keys))
	for _, k := range keys {
		out = append(out, server.Action{Operation: kmsg.ACLOperationDescribe, ResourceType: rt, Name: k})
	}
	return out
}

func (h *Handlers) handleFindCoordinator(ctx context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	find := func(key string) (int32, string, int32, error) {
		rt, ok := coordinatorResource(req.CoordinatorType)
		switch {
		case !ok:
			return -1, "", -1, kerr.InvalidRequest
		case rt == kmsg.ACLResourceTypeCluster:
			return h.findShareCoordinator(ctx, rc, key)
		case rt == kmsg.ACLResourceTypeTransactionalId && !rc.Authorized(kmsg.ACLOperationDescribe, rt, key):
			return -1, "", -1, kerr.TransactionalIDAuthorizationFailed
		case rt == kmsg.ACLResourceTypeTransactionalId && key == "":
			return -1, "", -1, kerr.InvalidRequest
		case rt == kmsg.ACLResourceTypeTransactionalId:
			id, ep, err := h.txns.Topic().CoordinatorFor(ctx, key, rc.Listener)
			return id, ep.Host, ep.Port, err
		case !rc.Authorized(kmsg.ACLOperationDescribe, rt, key):
			return -1, "", -1, kerr.GroupAuthorizationFailed
		}
		if key == "" {
			return -1, "", -1, kerr.InvalidRequest
		}
		id, ep, err := h.groups.Topic().CoordinatorFor(ctx, key, rc.Listener)
		if err != nil {
			return -1, "", -1, err
		}
		return id, ep.Host, ep.Port, nil
	}
	if req.Version < 4 {
		id, host, port, err := find(req.CoordinatorKey)
		resp.ErrorCode = errcode.Of(err)
		resp.NodeID, resp.Host, resp.Port = id, host, port
		if err != nil && req.Version >= 1 {
			resp.ErrorMessage = errcode.Message(err)
		}
		return resp, nil
	}
	for _, key := range req.CoordinatorKeys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key = key
		id, host, port, err := find(key)
		c.ErrorCode = errcode.Of(err)
		c.NodeID, c.Host, c.Port = id, host, port
		if err != nil {
			c.ErrorMessage = errcode.Message(err)
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	return resp, nil
}
