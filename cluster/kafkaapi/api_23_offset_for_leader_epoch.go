package kafkaapi

// OffsetForLeaderEpoch (key 23).
//
// For each partition this broker leads: the request's CurrentLeaderEpoch
// (v2+, -1 = no check) is checked as fetches check it
// (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH), then the answer is the
// largest leader epoch <= LeaderEpoch that the log knows and the end
// offset of that epoch: the start offset of the next epoch, or the log end
// offset for the current one (KIP-101, KIP-279). An epoch the log cannot
// place is answered -1/-1 with no error, as Kafka does. Followers ask it
// before fetching from a new leader; consumers use it to detect
// truncation (KIP-320). Errors are per partition: NOT_LEADER_OR_FOLLOWER
// for a partition hosted elsewhere or followed here,
// UNKNOWN_TOPIC_OR_PARTITION for one that does not exist.
//
// Differences from Kafka: v0 returns no leader epoch in the response (the
// field does not exist there), and ReplicaID (v3+) is not used to allow
// reads from followers: every request is answered by the leader only.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/replication"
)

func init() {
	register(apiSpec{key: 23, min: 0, max: 4, handle: (*Handlers).handleOffsetForLeaderEpoch})
}

func (h *Handlers) handleOffsetForLeaderEpoch(_ context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	// As in Kafka: CLUSTER_ACTION (followers) covers every topic;
	// otherwise each topic needs DESCRIBE.
	clusterAction := rc.AuthorizedCluster(kmsg.ACLOperationClusterAction)
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.Topic
		authorized := clusterAction || rc.AuthorizedTopic(kmsg.ACLOperationDescribe, t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			rp.Partition = p.Partition
			if !authorized {
				rp.LeaderEpoch, rp.EndOffset = -1, -1
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			tp := replication.TopicPartition{Topic: t.Topic, Partition: p.Partition}
			current := p.CurrentLeaderEpoch
			if req.Version < 2 {
				current = -1
			}
			epoch, end, err := h.replicas.EndOffsetForEpoch(tp, current, p.LeaderEpoch)
			if err != nil {
				if _, herr := h.hostedPartition(tp); herr != nil {
					err = herr
				}
				rp.ErrorCode = errcode.Of(err)
			} else {
				rp.LeaderEpoch, rp.EndOffset = epoch, end
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
