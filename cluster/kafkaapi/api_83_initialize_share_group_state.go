package kafkaapi

// InitializeShareGroupState (key 83).
//
// KIP-932, between brokers.
//
// Starts share-partitions over at a start offset with a new state epoch
// (an older or equal one is FENCED_STATE_EPOCH), on the share
// coordinator: the leader of the key's partition of __share_group_state
// (NOT_COORDINATOR elsewhere, COORDINATOR_LOAD_IN_PROGRESS while it
// loads). Needs CLUSTER_ACTION on the cluster.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/cluster/share"
)

func init() {
	register(apiSpec{key: 83, min: 0, max: 0, handle: (*Handlers).handleInitializeShareGroupState,
		actions: server.ClusterAction(kmsg.ACLOperationClusterAction)})
}

func (h *Handlers) handleInitializeShareGroupState(ctx context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.InitializeShareGroupStateRequest)
	resp := req.ResponseKind().(*kmsg.InitializeShareGroupStateResponse)
	allowed := rc.AuthorizedCluster(kmsg.ACLOperationClusterAction)
	for _, t := range req.Topics {
		rt := kmsg.NewInitializeShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			var err error = kerr.ClusterAuthorizationFailed
			if allowed {
				err = h.shares.InitializeState(ctx, share.StateKey{Group: req.GroupID, TopicID: t.TopicID, Partition: p.Partition}, p.StateEpoch, p.StartOffset)
			}
			rp.ErrorCode, rp.ErrorMessage = errcode.Of(err), errcode.Message(err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
