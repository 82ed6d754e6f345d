package cluster

// FindCoordinator (key 10), v0–6, both the single-key (v0–3) and the
// batched (v4+) layouts.
//
// Until the group coordinator exists (it will live on the leaders of
// __consumer_offsets partitions), every key is coordinated by the broker
// that answers, so the reply is this broker's own endpoint on the
// listener the request came in on.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (n *Node) handleFindCoordinator(_ context.Context, rc *RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	ep, ok := n.store.Image().BrokerEndpoint(n.cfg.NodeID, rc.Listener)
	code := int16(0)
	if !ok {
		code = kerr.CoordinatorNotAvailable.Code
	}
	if req.Version < 4 {
		resp.ErrorCode = code
		resp.NodeID, resp.Host, resp.Port = n.cfg.NodeID, ep.Host, ep.Port
		if !ok {
			resp.NodeID = -1
		}
		return resp, nil
	}
	for _, key := range req.CoordinatorKeys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key = key
		c.ErrorCode = code
		c.NodeID, c.Host, c.Port = n.cfg.NodeID, ep.Host, ep.Port
		if !ok {
			c.NodeID = -1
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	return resp, nil
}
