package kafkaapi

// DeleteShareGroupState (key 86).
//
// KIP-932, between brokers.
//
// Deletes share-partitions' states (a tombstone in __share_group_state);
// deleting one without state succeeds. Served by the share coordinator.
// Needs CLUSTER_ACTION.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/cluster/share"
)

func init() {
	register(apiSpec{key: 86, min: 0, max: 0, handle: (*Handlers).handleDeleteShareGroupState,
		actions: server.ClusterAction(kmsg.ACLOperationClusterAction)})
}

func (h *Handlers) handleDeleteShareGroupState(ctx context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DeleteShareGroupStateRequest)
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupStateResponse)
	allowed := rc.AuthorizedCluster(kmsg.ACLOperationClusterAction)
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			var err error = kerr.ClusterAuthorizationFailed
			if allowed {
				err = h.shares.DeleteState(ctx, share.StateKey{Group: req.GroupID, TopicID: t.TopicID, Partition: p.Partition})
			}
			rp.ErrorCode, rp.ErrorMessage = errcode.Of(err), errcode.Message(err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
