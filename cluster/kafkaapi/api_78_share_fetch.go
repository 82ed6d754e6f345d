package kafkaapi

// ShareFetch (key 78).
//
// KIP-932; v1 KIP-1206 record limits; v2 KIP-1222 renew acknowledgements and the acquire mode.
//
// Served by the leader of each partition (package sharepart): the share
// session of the member moves by its epoch (0 opens one, -1 closes it,
// anything else must be the session's: SHARE_SESSION_NOT_FOUND,
// INVALID_SHARE_SESSION_EPOCH), the acknowledgements carried are applied
// (INVALID_RECORD_STATE for a record the member does not hold, e.g.
// whose lock ended), then records are acquired for the member from
// every partition of its session, up to MaxRecords, and sent with the
// ranges it holds and their delivery counts. A fetch that acquired
// nothing waits up to MaxWait for records. IsRenewAck fetches nothing.
//
// Needs READ on the group (GROUP_AUTHORIZATION_FAILED) and on each topic
// (TOPIC_AUTHORIZATION_FAILED for its partitions).

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/cluster/share"
	"github.com/kbroker/kbroker/cluster/sharepart"
	"github.com/kbroker/kbroker/metadata"
)

func init() {
	register(apiSpec{key: 78, min: 1, max: 2, handle: (*Handlers).handleShareFetch})
}

// shareAcks turns acknowledgement batches into share's, refusing
// malformed ones (INVALID_REQUEST).
func shareAcks(first, last []int64, types [][]int8) ([]share.Ack, error) {
	out := make([]share.Ack, 0, len(first))
	for i := range first {
		if last[i] < first[i] || len(types[i]) == 0 {
			return nil, fmt.Errorf("%w: acknowledgement batch [%d, %d] with %d types", kerr.InvalidRequest, first[i], last[i], len(types[i]))
		}
		a := share.Ack{First: first[i], Last: last[i], Types: make([]share.AckType, len(types[i]))}
		for j, t := range types[i] {
			a.Types[j] = share.AckType(t)
		}
		out = append(out, a)
	}
	return out, nil
}

func (h *Handlers) handleShareFetch(ctx context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ShareFetchRequest)
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	group := deref(req.GroupID)
	if !rc.AuthorizedGroup(kmsg.ACLOperationRead, group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	img := h.image()
	fr := sharepart.FetchRequest{
		Group: group, Member: deref(req.MemberID), Epoch: req.ShareSessionEpoch,
		MaxRecords: int(req.MaxRecords), MaxBytes: int(req.MaxBytes),
		Wait: time.Duration(req.MaxWaitMillis) * time.Millisecond,
	}
	if req.Version < 1 || req.MaxRecords <= 0 {
		fr.MaxRecords = 500 // KIP-1206's default
	}
	denied := map[sharepart.TP]error{}
	for _, t := range req.Topics {
		name, nerr := topicNameByID(img, t.TopicID)
		for _, p := range t.Partitions {
			tp := sharepart.TP{TopicID: t.TopicID, Partition: p.Partition}
			if nerr == nil && !rc.AuthorizedTopic(kmsg.ACLOperationRead, name) {
				denied[tp] = kerr.TopicAuthorizationFailed
				continue
			}
			pr := sharepart.PartitionRequest{TP: tp, MaxBytes: int(p.PartitionMaxBytes), HasAcks: len(p.AcknowledgementBatches) > 0}
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
			pr.Acks = acks
			fr.Partitions = append(fr.Partitions, pr)
		}
	}
	for _, t := range req.ForgottenTopicsData {
		for _, p := range t.Partitions {
			fr.Forget = append(fr.Forget, sharepart.TP{TopicID: t.TopicID, Partition: p})
		}
	}
	if req.IsRenewAck {
		// KIP-1222: a renewal only moves lock deadlines.
		fr.Acknowledge, fr.Wait = fr.Epoch != sharepart.OpenEpoch, 0
	}
	res := h.shareParts.Fetch(ctx, fr)
	resp.AcquisitionLockTimeoutMillis = int32(res.LockDuration.Milliseconds())
	if res.Err != nil {
		resp.ErrorCode, resp.ErrorMessage = errcode.Of(res.Err), errcode.Message(res.Err)
		return resp, nil
	}
	leaders := map[int32]bool{}
	topicIdx := map[[16]byte]int{}
	add := func(pr sharepart.PartitionResult) {
		i, ok := topicIdx[pr.TopicID]
		if !ok {
			i = len(resp.Topics)
			topicIdx[pr.TopicID] = i
			rt := kmsg.NewShareFetchResponseTopic()
			rt.TopicID = pr.TopicID
			resp.Topics = append(resp.Topics, rt)
		}
		rp := kmsg.NewShareFetchResponseTopicPartition()
		rp.Partition = pr.Partition
		rp.ErrorCode, rp.ErrorMessage = errcode.Of(pr.Err), errcode.Message(pr.Err)
		rp.AcknowledgeErrorCode, rp.AcknowledgeErrorMessage = errcode.Of(pr.AckErr), errcode.Message(pr.AckErr)
		shareLeaderHint(img, pr.TopicID, pr.Partition, pr.Err, &rp.CurrentLeader.LeaderID, &rp.CurrentLeader.LeaderEpoch, leaders)
		rp.Records = pr.Records
		for _, a := range pr.Acquired {
			ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
			ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = a.First, a.Last, int16(min(a.DeliveryCount, 1<<15-1))
			rp.AcquiredRecords = append(rp.AcquiredRecords, ar)
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	for tp, err := range denied {
		add(sharepart.PartitionResult{TP: tp, Err: err})
	}
	for _, pr := range res.Partitions {
		add(pr)
	}
	for id := range leaders {
		if ep, ok := img.BrokerEndpoint(id, rc.Listener); ok {
			ne := kmsg.NewShareFetchResponseNodeEndpoint()
			ne.NodeID, ne.Host, ne.Port = id, ep.Host, ep.Port
			if b, ok := img.Brokers[id]; ok && b.Rack != "" {
				rack := b.Rack
				ne.Rack = &rack
			}
			resp.NodeEndpoints = append(resp.NodeEndpoints, ne)
		}
	}
	return resp, nil
}

// shareLeaderHint fills in the current leader of a partition answered
// NOT_LEADER_OR_FOLLOWER (KIP-951), noting it for the node endpoints.
func shareLeaderHint(img *metadata.Image, topicID [16]byte, p int32, err error, id, epoch *int32, leaders map[int32]bool) {
	*id, *epoch = -1, -1
	if err == nil || errcode.Of(err) != kerr.NotLeaderForPartition.Code {
		return
	}
	t, ok := img.TopicsByID[topicID]
	if !ok {
		return
	}
	mp, ok := img.Partition(t.Name, p)
	if !ok || mp.Leader == metadata.NoLeader {
		return
	}
	*id, *epoch = mp.Leader, mp.LeaderEpoch
	leaders[mp.Leader] = true
}
