package kafkaapi

// UnregisterBroker (key 64).
//
// An operator removes a broker that is gone for good from the cluster
// (Kafka's UnregisterBroker, KIP-631): the broker forwards it to the
// active controller (metadata.UnregisterBroker), which removes the
// registration from the metadata image, so the broker disappears from
// Metadata and DescribeCluster answers and from placement. Partitions
// that list it as a replica keep it listed, as Kafka's do: move them away
// first (`kbroker admin reassign`). A process that starts later with the
// id registers anew.
//
// It needs ALTER on the CLUSTER (CLUSTER_AUTHORIZATION_FAILED otherwise).
// An id that is not registered gets BROKER_ID_NOT_REGISTERED. Unlike
// Kafka, a broker that is unfenced (alive and heartbeating) is refused
// with INVALID_REQUEST and a message saying to stop it first: Kafka
// unregisters it and leaves the running process without a registration.

import (
	"context"
	"time"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiSpec{key: 64, min: 0, max: 0, handle: (*Handlers).handleUnregisterBroker, actions: server.ClusterAction(kmsg.ACLOperationAlter)})
}

// unregisterBrokerTimeout bounds the controller round trip; the request
// carries no timeout of its own.
const unregisterBrokerTimeout = 30 * time.Second

func (h *Handlers) handleUnregisterBroker(ctx context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.UnregisterBrokerRequest)
	resp := req.ResponseKind().(*kmsg.UnregisterBrokerResponse)
	if !rc.AuthorizedCluster(kmsg.ACLOperationAlter) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	ctx, cancel := context.WithTimeout(ctx, unregisterBrokerTimeout)
	defer cancel()
	if err := h.store.UnregisterBroker(ctx, req.BrokerID); err != nil {
		resp.ErrorCode = errcode.Of(err)
		resp.ErrorMessage = errcode.Message(err)
		h.logger.Info("unregister broker refused", "broker", req.BrokerID, "err", err)
		return resp, nil
	}
	h.logger.Info("broker unregistered", "broker", req.BrokerID)
	return resp, nil
}
