package kafkaapi

// ReadShareGroupStateSummary (key 87).
//
// KIP-932, between brokers.
//
// A share-partition's state epoch, leader epoch and start offset, for
// DescribeShareGroupOffsets; one without state is
// UNKNOWN_TOPIC_OR_PARTITION. Served by the share coordinator. Needs
// CLUSTER_ACTION.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/cluster/share"
	"github.com/kbroker/kbroker/cluster/sharecoord"
)

func init() {
	register(apiSpec{key: 87, min: 0, max: 1, handle: (*Handlers).handleReadShareGroupStateSummary,
		actions: server.ClusterAction(kmsg.ACLOperationClusterAction)})
}

func (h *Handlers) handleReadShareGroupStateSummary(_ context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ReadShareGroupStateSummaryRequest)
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateSummaryResponse)
	allowed := rc.AuthorizedCluster(kmsg.ACLOperationClusterAction)
	for _, t := range req.Topics {
		rt := kmsg.NewReadShareGroupStateSummaryResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
			rp.Partition = p.Partition
			var err error = kerr.ClusterAuthorizationFailed
			if allowed {
				var s sharecoord.Summary
				s, err = h.shares.SummaryState(share.StateKey{Group: req.GroupID, TopicID: t.TopicID, Partition: p.Partition})
				rp.StateEpoch, rp.LeaderEpoch, rp.StartOffset = s.StateEpoch, s.LeaderEpoch, s.StartOffset
				rp.DeliveryCompleteCount = s.DeliveryComplete
			}
			if err != nil {
				rp.StartOffset, rp.LeaderEpoch = -1, -1
			}
			rp.ErrorCode, rp.ErrorMessage = errcode.Of(err), errcode.Message(err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
