package kafkaapi

// ReadShareGroupState (key 84).
//
// KIP-932, between brokers.
//
// A share-partition's persisted state for its (new) leader: its state
// epoch, start offset and state batches; the leader epoch given is
// recorded, fencing the writes of older leaders. A share-partition
// without state is UNKNOWN_TOPIC_OR_PARTITION. Served by the share
// coordinator (see InitializeShareGroupState). Needs CLUSTER_ACTION.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/cluster/share"
)

func init() {
	register(apiSpec{key: 84, min: 0, max: 0, handle: (*Handlers).handleReadShareGroupState,
		actions: server.ClusterAction(kmsg.ACLOperationClusterAction)})
}

func (h *Handlers) handleReadShareGroupState(ctx context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ReadShareGroupStateRequest)
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateResponse)
	allowed := rc.AuthorizedCluster(kmsg.ACLOperationClusterAction)
	for _, t := range req.Topics {
		rt := kmsg.NewReadShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewReadShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			var err error = kerr.ClusterAuthorizationFailed
			if allowed {
				var s share.Snapshot
				s, err = h.shares.ReadState(ctx, share.StateKey{Group: req.GroupID, TopicID: t.TopicID, Partition: p.Partition}, p.LeaderEpoch)
				if err == nil {
					rp.StateEpoch, rp.StartOffset = s.StateEpoch, s.StartOffset
					for _, b := range s.Batches {
						sb := kmsg.NewReadShareGroupStateResponseTopicPartitionStateBatch()
						sb.FirstOffset, sb.LastOffset, sb.DeliveryState = b.First, b.Last, int8(b.State)
						sb.DeliveryCount = int16(min(b.DeliveryCount, 1<<15-1))
						rp.StateBatches = append(rp.StateBatches, sb)
					}
				}
			}
			rp.ErrorCode, rp.ErrorMessage = errcode.Of(err), errcode.Message(err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
