package kafkaapi

// RemoveRaftVoter (key 81).
//
// Removes a voter from the metadata quorum (KIP-853). Every node forwards
// it to the active controller (metadata.RemoveVoter), which removes it
// with raft's RemoveServer and answers once the new configuration is
// committed. Removing the active controller itself first hands its
// leadership to the most caught-up voter, which then removes it (Kafka's
// leader resigns after the removal commits). A removed node that still
// runs follows the metadata log as an observer until it is stopped, and
// never becomes a voter again by itself, also across restarts.
//
// Errors: CLUSTER_AUTHORIZATION_FAILED without ALTER on the CLUSTER;
// INCONSISTENT_CLUSTER_ID for a cluster id that is not this cluster's;
// VOTER_NOT_FOUND for a node that is not a voter; REQUEST_TIMED_OUT while
// another voter change is in progress or when the change does not commit
// in time, as Kafka's RemoveVoterHandler. Beyond Kafka, INVALID_REQUEST
// for the last voter (Kafka answers VOTER_NOT_FOUND, which misleads) and
// for a removal that would leave fewer answering voters than a majority
// of the remaining ones (Kafka appends the change and times out, leaving
// the quorum unable to commit). The directory id is not checked.

import (
	"context"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiSpec{key: 81, min: 0, max: 0, handle: (*Handlers).handleRemoveRaftVoter, actions: server.ClusterAction(kmsg.ACLOperationAlter)})
}

func (h *Handlers) handleRemoveRaftVoter(ctx context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.RemoveRaftVoterRequest)
	resp := req.ResponseKind().(*kmsg.RemoveRaftVoterResponse)
	if !rc.AuthorizedCluster(kmsg.ACLOperationAlter) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	if msg, ok := h.checkClusterID(req.ClusterID); !ok {
		resp.ErrorCode = kerr.InconsistentClusterID.Code
		resp.ErrorMessage = &msg
		return resp, nil
	}
	ctx, cancel := context.WithTimeout(ctx, voterChangeTimeout)
	defer cancel()
	if err := h.store.RemoveVoter(ctx, req.VoterID); err != nil {
		resp.ErrorCode = voterChangeErrorCode(err)
		resp.ErrorMessage = errcode.Message(err)
		h.logger.Info("remove raft voter refused", "voter", req.VoterID, "err", err)
		return resp, nil
	}
	h.logger.Info("raft voter removed", "voter", req.VoterID)
	return resp, nil
}
