package kafkaapi

// AddRaftVoter (key 80).
//
// Makes a node a voter of the metadata quorum (KIP-853). Every node
// forwards it to the active controller (metadata.AddVoter), as a Kafka
// broker forwards it to the controller. The node must already follow the
// metadata log as an observer (a node started with controller.quorum.voters
// naming the current voters but not itself joins as a raft non-voter) and
// hold everything committed; the controller then adds it with raft's
// AddVoter and answers once the new configuration is committed, which
// also persists it across restarts.
//
// Errors, as Kafka's AddVoterHandler: CLUSTER_AUTHORIZATION_FAILED without
// ALTER on the CLUSTER; INCONSISTENT_CLUSTER_ID for a cluster id that is
// not this cluster's; DUPLICATE_VOTER for a voter; REQUEST_TIMED_OUT when
// the node does not follow the log, has not caught up by the request's
// timeout, another voter change is still in progress, or the change did
// not commit in time; INVALID_REQUEST for listeners without one of
// controller.listener.names, or whose address is not the one the node
// follows the log from. Unlike Kafka, Listeners may be empty (the
// controller knows the node's address from when it joined) and the
// directory id is not checked (the quorum has none). NOT_CONTROLLER when
// no active controller can be reached.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiSpec{key: 80, min: 0, max: 0, handle: (*Handlers).handleAddRaftVoter, actions: server.ClusterAction(kmsg.ACLOperationAlter)})
}

// voterChangeTimeout is the timeout of a voter change whose request has
// none (RemoveRaftVoter, an AddRaftVoter with TimeoutMillis <= 0).
const voterChangeTimeout = 30 * time.Second

func (h *Handlers) handleAddRaftVoter(ctx context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.AddRaftVoterRequest)
	resp := req.ResponseKind().(*kmsg.AddRaftVoterResponse)
	fail := func(code *kerr.Error, msg string) (kmsg.Response, error) {
		resp.ErrorCode = code.Code
		resp.ErrorMessage = &msg
		return resp, nil
	}
	if !rc.AuthorizedCluster(kmsg.ACLOperationAlter) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	if msg, ok := h.checkClusterID(req.ClusterID); !ok {
		return fail(kerr.InconsistentClusterID, msg)
	}
	var addr string
	if len(req.Listeners) > 0 {
		i := slices.IndexFunc(req.Listeners, func(l kmsg.AddRaftVoterRequestListener) bool {
			return slices.Contains(h.cfg.ControllerListenerNames, l.Name)
		})
		if i < 0 {
			return fail(kerr.InvalidRequest, fmt.Sprintf("the listeners of voter %d do not include the controller listener %s",
				req.VoterID, h.controllerListenerName()))
		}
		addr = net.JoinHostPort(req.Listeners[i].Host, strconv.Itoa(int(req.Listeners[i].Port)))
	}
	timeout := voterChangeTimeout
	if req.TimeoutMillis > 0 {
		timeout = time.Duration(req.TimeoutMillis) * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := h.store.AddVoter(ctx, req.VoterID, addr); err != nil {
		resp.ErrorCode = voterChangeErrorCode(err)
		resp.ErrorMessage = errcode.Message(err)
		h.logger.Info("add raft voter refused", "voter", req.VoterID, "err", err)
		return resp, nil
	}
	h.logger.Info("raft voter added", "voter", req.VoterID)
	return resp, nil
}

// checkClusterID checks a request's optional cluster id against the
// image's, as Kafka's raft client does (INCONSISTENT_CLUSTER_ID).
func (h *Handlers) checkClusterID(id *string) (string, bool) {
	if id == nil {
		return "", true
	}
	if have := h.store.Image().ClusterID; *id != have {
		return fmt.Sprintf("the given id %q does not match the cluster id %q", *id, have), false
	}
	return "", true
}

// voterChangeErrorCode is errcode.Of for a voter change, with a deadline
// answered REQUEST_TIMED_OUT as Kafka's voter change handlers do (a
// forwarding that timed out also wraps NOT_CONTROLLER).
func voterChangeErrorCode(err error) int16 {
	if errors.Is(err, context.DeadlineExceeded) {
		return kerr.RequestTimedOut.Code
	}
	return errcode.Of(err)
}
