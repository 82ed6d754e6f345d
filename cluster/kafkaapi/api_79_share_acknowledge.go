package kafkaapi

// ShareAcknowledge (key 79).
//
// KIP-932; v2 KIP-1222 renewals.
//
// Acknowledgements outside a fetch, on the member's share session (its
// epoch must be the session's; -1 closes the session after them, which
// releases the records the member still holds; 0 cannot open one:
// INVALID_SHARE_SESSION_EPOCH). Each partition's acknowledgements apply
// all or none: a record the member does not hold (never acquired, its
// lock ended, acknowledged already) is INVALID_RECORD_STATE.
//
// Needs READ on the group (GROUP_AUTHORIZATION_FAILED) and on each topic
// (TOPIC_AUTHORIZATION_FAILED for its partitions).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/cluster/sharepart"
)

func init() {
	register(apiSpec{key: 79, min: 1, max: 2, handle: (*Handlers).handleShareAcknowledge})
}

func (h *Handlers) handleShareAcknowledge(ctx context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ShareAcknowledgeRequest)
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	group := deref(req.GroupID)
	if !rc.AuthorizedGroup(kmsg.ACLOperationRead, group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	img := h.image()
	fr := sharepart.FetchRequest{Group: group, Member: deref(req.MemberID), Epoch: req.ShareSessionEpoch, Acknowledge: true}
	denied := map[sharepart.TP]error{}
	for _, t := range req.Topics {
		name, nerr := topicNameByID(img, t.TopicID)
		for _, p := range t.Partitions {
			tp := sharepart.TP{TopicID: t.TopicID, Partition: p.Partition}
			if nerr == nil && !rc.AuthorizedTopic(kmsg.ACLOperationRead, name) {
				denied[tp] = kerr.TopicAuthorizationFailed
				continue
			}
			var first, last []int64
			var types [][]int8
			for _, b := range p.AcknowledgementBatches {
				first, last, types = append(first, b.FirstOffset), append(last, b.LastOffset), append(types, b.AcknowledgeTypes)
			}
			acks, err := shareAcks(first, last, types)
			if err != nil {
				resp.ErrorCode, resp.ErrorMessage = errcode.Of(err), errcode.Message(err)
				return resp, nil
			}
			fr.Partitions = append(fr.Partitions, sharepart.PartitionRequest{TP: tp, Acks: acks, HasAcks: true})
		}
	}
	res := h.shareParts.Fetch(ctx, fr)
	resp.AcquisitionLockTimeoutMillis = int32(res.LockDuration.Milliseconds())
	if res.Err != nil {
		resp.ErrorCode, resp.ErrorMessage = errcode.Of(res.Err), errcode.Message(res.Err)
		return resp, nil
	}
	leaders := map[int32]bool{}
	topicIdx := map[[16]byte]int{}
	add := func(tp sharepart.TP, err error) {
		i, ok := topicIdx[tp.TopicID]
		if !ok {
			i = len(resp.Topics)
			topicIdx[tp.TopicID] = i
			rt := kmsg.NewShareAcknowledgeResponseTopic()
			rt.TopicID = tp.TopicID
			resp.Topics = append(resp.Topics, rt)
		}
		rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
		rp.Partition = tp.Partition
		rp.ErrorCode, rp.ErrorMessage = errcode.Of(err), errcode.Message(err)
		shareLeaderHint(img, tp.TopicID, tp.Partition, err, &rp.CurrentLeader.LeaderID, &rp.CurrentLeader.LeaderEpoch, leaders)
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	for tp, err := range denied {
		add(tp, err)
	}
	for _, pr := range res.Partitions {
		add(pr.TP, pr.AckErr)
	}
	for id := range leaders {
		if ep, ok := img.BrokerEndpoint(id, rc.Listener); ok {
			ne := kmsg.NewShareAcknowledgeResponseNodeEndpoint()
			ne.NodeID, ne.Host, ne.Port = id, ep.Host, ep.Port
			resp.NodeEndpoints = append(resp.NodeEndpoints, ne)
		}
	}
	return resp, nil
}
