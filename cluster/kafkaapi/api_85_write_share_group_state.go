package kafkaapi

// WriteShareGroupState (key 85).
//
// KIP-932, between brokers.
//
// A share-partition leader's state: its state batches replace those they
// overlap, those below the new start offset go. An older state epoch is
// FENCED_STATE_EPOCH, an older leader epoch FENCED_LEADER_EPOCH; batches
// out of order or in a state a write cannot carry are INVALID_REQUEST.
// Served by the share coordinator once the write is replicated
// (acks=all). Needs CLUSTER_ACTION.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/cluster/share"
)

func init() {
	register(apiSpec{key: 85, min: 0, max: 1, handle: (*Handlers).handleWriteShareGroupState,
		actions: server.ClusterAction(kmsg.ACLOperationClusterAction)})
}

// checkStateBatches refuses batches a share-partition state cannot hold.
func checkStateBatches(bs []share.StateBatch) error {
	for i, b := range bs {
		switch {
		case b.Last < b.First, i > 0 && b.First <= bs[i-1].Last:
			return fmt.Errorf("%w: state batch [%d, %d] out of order", kerr.InvalidRequest, b.First, b.Last)
		case b.State != share.Available && b.State != share.Acknowledged && b.State != share.Archived:
			return fmt.Errorf("%w: state batch [%d, %d] in state %d", kerr.InvalidRequest, b.First, b.Last, b.State)
		case b.DeliveryCount < 0:
			return fmt.Errorf("%w: state batch [%d, %d] with delivery count %d", kerr.InvalidRequest, b.First, b.Last, b.DeliveryCount)
		}
	}
	return nil
}

func (h *Handlers) handleWriteShareGroupState(ctx context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.WriteShareGroupStateRequest)
	resp := req.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
	allowed := rc.AuthorizedCluster(kmsg.ACLOperationClusterAction)
	for _, t := range req.Topics {
		rt := kmsg.NewWriteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewWriteShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			var err error = kerr.ClusterAuthorizationFailed
			if allowed {
				s := share.Snapshot{StateEpoch: p.StateEpoch, StartOffset: p.StartOffset, Batches: make([]share.StateBatch, 0, len(p.StateBatches))}
				for _, b := range p.StateBatches {
					s.Batches = append(s.Batches, share.StateBatch{First: b.FirstOffset, Last: b.LastOffset, State: share.RecordState(b.DeliveryState), DeliveryCount: int32(b.DeliveryCount)})
				}
				if err = checkStateBatches(s.Batches); err == nil {
					err = h.shares.WriteState(ctx, share.StateKey{Group: req.GroupID, TopicID: t.TopicID, Partition: p.Partition}, p.LeaderEpoch, s)
				}
			}
			rp.ErrorCode, rp.ErrorMessage = errcode.Of(err), errcode.Message(err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
