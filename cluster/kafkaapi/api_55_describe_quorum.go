package kafkaapi

// DescribeQuorum (key 55).
//
// The state of the metadata quorum (KIP-595, KIP-836, KIP-853) for the
// one partition Kafka names __cluster_metadata-0. As a Kafka broker
// forwards DescribeQuorum to the active controller, every node asks the
// active controller (metadata.DescribeQuorum, over the controller RPC)
// and answers what it says: leader id = the active controller's node id,
// leader epoch = the raft term, high watermark = the raft commit index,
// current voters and observers (raft non-voters: broker-only nodes, and
// removed voters still running) with their log end offset (the last raft
// index the replica reports; -1 if it did not answer), v1's last fetch
// time (when the replica last heard from the leader) and last caught-up
// time (when the leader last found it holding the commit index), and v2's
// nodes: each voter's controller listener. Offsets are raft indexes, so
// a caught-up replica shows a log end offset equal to the high watermark.
// v2's ReplicaDirectoryId is the zero UUID: kbroker's quorum has no
// directory ids.
//
// It needs DESCRIBE on the CLUSTER (top-level
// CLUSTER_AUTHORIZATION_FAILED otherwise). A topic or partition other
// than __cluster_metadata-0 gets UNKNOWN_TOPIC_OR_PARTITION on it, as
// Kafka's raft client answers. When no active controller can be reached,
// the partition gets NOT_LEADER_OR_FOLLOWER, what Kafka's controllers
// answer while they know no leader.

import (
	"context"
	"errors"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/metadata"
)

func init() {
	register(apiSpec{key: 55, min: 0, max: 2, handle: (*Handlers).handleDescribeQuorum, actions: server.ClusterAction(kmsg.ACLOperationDescribe)})
}

// clusterMetadataTopic is the name Kafka gives its metadata log.
const clusterMetadataTopic = "__cluster_metadata"

// describeQuorumTimeout bounds the round trip to the active controller,
// which asks every replica (each for at most a second, concurrently).
const describeQuorumTimeout = 10 * time.Second

func (h *Handlers) handleDescribeQuorum(ctx context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeQuorumRequest)
	resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
	if !rc.AuthorizedCluster(kmsg.ACLOperationDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	if len(req.Topics) != 1 || req.Topics[0].Topic != clusterMetadataTopic ||
		len(req.Topics[0].Partitions) != 1 || req.Topics[0].Partitions[0].Partition != 0 {
		for _, t := range req.Topics {
			rt := kmsg.NewDescribeQuorumResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewDescribeQuorumResponseTopicPartition()
				rp.Partition = p.Partition
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	rt := kmsg.NewDescribeQuorumResponseTopic()
	rt.Topic = clusterMetadataTopic
	rp := kmsg.NewDescribeQuorumResponseTopicPartition()
	rp.Partition = 0

	ctx, cancel := context.WithTimeout(ctx, describeQuorumTimeout)
	defer cancel()
	d, err := h.store.DescribeQuorum(ctx)
	switch {
	case errors.Is(err, metadata.ErrNotController) || errors.Is(err, metadata.ErrClosed):
		rp.ErrorCode = kerr.NotLeaderForPartition.Code
		rp.ErrorMessage = errcode.Message(err)
		rp.LeaderID, rp.LeaderEpoch, rp.HighWatermark = -1, -1, -1
	case err != nil:
		resp.ErrorCode = errcode.Of(err)
		resp.ErrorMessage = errcode.Message(err)
		return resp, nil
	default:
		rp.LeaderID, rp.LeaderEpoch, rp.HighWatermark = d.LeaderID, d.LeaderEpoch, d.HighWatermark
		rp.CurrentVoters = quorumReplicaStates(d.Voters)
		rp.Observers = quorumReplicaStates(d.Observers)
		if req.Version >= 2 {
			for _, v := range d.Voters {
				resp.Nodes = append(resp.Nodes, h.quorumNode(v))
			}
		}
	}
	rt.Partitions = append(rt.Partitions, rp)
	resp.Topics = append(resp.Topics, rt)
	return resp, nil
}

func quorumReplicaStates(rs []metadata.QuorumReplica) []kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
	out := make([]kmsg.DescribeQuorumResponseTopicPartitionReplicaState, 0, len(rs))
	for _, r := range rs {
		s := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		s.ReplicaID = r.ID
		s.LogEndOffset = r.LogEndOffset
		s.LastFetchTimestamp = r.LastFetchTimestamp
		s.LastCaughtUpTimestamp = r.LastCaughtUpTimestamp
		out = append(out, s)
	}
	return out
}

// quorumNode is a voter with its controller listener, named as this
// node's first controller.listener.names entry: every node has the same
// controller listener names.
func (h *Handlers) quorumNode(r metadata.QuorumReplica) kmsg.DescribeQuorumResponseNode {
	node := kmsg.NewDescribeQuorumResponseNode()
	node.NodeID = r.ID
	host, port, err := net.SplitHostPort(r.Addr)
	if err != nil {
		return node
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return node
	}
	l := kmsg.NewDescribeQuorumResponseNodeListener()
	l.Name = h.controllerListenerName()
	l.Host, l.Port = host, uint16(p)
	node.Listeners = append(node.Listeners, l)
	return node
}

func (h *Handlers) controllerListenerName() string {
	if len(h.cfg.ControllerListenerNames) > 0 {
		return h.cfg.ControllerListenerNames[0]
	}
	return "CONTROLLER"
}
