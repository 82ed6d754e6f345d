package kafkaapi

// DescribeCluster (key 60).
//
// The unfenced brokers with their endpoint on the listener the request
// came in on, the cluster id and the active controller (or a broker that
// forwards to it: advertisedControllerID). EndpointType 2
// (v1, controllers) is refused with UNSUPPORTED_ENDPOINT_TYPE: clients
// reach the controllers only through the brokers. v2
// (IncludeFencedBrokers) adds the fenced brokers, with IsFenced set.
//
// As in Kafka, anybody may describe the cluster; the cluster's authorized
// operations, when asked for, are computed only for a principal with
// DESCRIBE on the CLUSTER (0 otherwise).

import (
	"context"

	"github.com/kbroker/kbroker/cluster/server"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiSpec{key: 60, min: 0, max: 2, handle: (*Handlers).handleDescribeCluster})
}

func (h *Handlers) handleDescribeCluster(_ context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = req.EndpointType
	resp.ClusterAuthorizedOperations = authorizedOperationsOmitted
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = 0
		if rc.AuthorizedCluster(kmsg.ACLOperationDescribe) {
			resp.ClusterAuthorizedOperations = rc.AuthorizedOperations(kmsg.ACLResourceTypeCluster, server.ClusterResourceName, server.ClusterOperations)
		}
	}
	if req.Version >= 1 && req.EndpointType != 1 {
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		return resp, nil
	}
	img := h.store.Image()
	resp.ClusterID = img.ClusterID
	var unfenced []int32
	for _, b := range listenerBrokers(img, rc.Listener, req.IncludeFencedBrokers) {
		db := kmsg.NewDescribeClusterResponseBroker()
		db.NodeID, db.Host, db.Port, db.Rack = b.NodeID, b.Host, b.Port, b.Rack
		db.IsFenced = img.Brokers[b.NodeID].Fenced
		resp.Brokers = append(resp.Brokers, db)
		if !db.IsFenced {
			unfenced = append(unfenced, db.NodeID)
		}
	}
	resp.ControllerID = advertisedControllerID(h.store.ControllerID(), unfenced)
	return resp, nil
}
