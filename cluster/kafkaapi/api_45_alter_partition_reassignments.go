package kafkaapi

// AlterPartitionAssignments (key 45).
//
// Kafka's AlterPartitionReassignments: starts, replaces or (null
// replicas) cancels partition reassignments as Kafka does (KIP-455): the
// controller adds the target replicas first, they catch up and join the
// ISR, and only then are the removed replicas dropped
// (metadata.AlterPartitionReassignments). The answer comes when the
// reassignments are committed, not when the data has moved;
// ListPartitionReassignments shows those in progress. v1's
// AllowReplicationFactorChange false refuses a target of another size
// (INVALID_REPLICATION_FACTOR). A partition named twice is
// INVALID_REQUEST. It needs ALTER on the CLUSTER.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/metadata"
)

func init() {
	register(apiSpec{key: 45, min: 0, max: 1, handle: (*Handlers).handleAlterPartitionReassignments, actions: server.ClusterAction(kmsg.ACLOperationAlter)})
}

func (h *Handlers) handleAlterPartitionReassignments(ctx context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	allowRF := req.Version < 1 || req.AllowReplicationFactorChange
	resp.AllowReplicationFactorChange = allowRF
	if !rc.AuthorizedCluster(kmsg.ACLOperationAlter) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	type slot struct{ t, p int } // where a partition's answer goes
	count := map[string]map[int32]int{}
	for _, t := range req.Topics {
		if count[t.Topic] == nil {
			count[t.Topic] = map[int32]int{}
		}
		for _, p := range t.Partitions {
			count[t.Topic][p.Partition]++
		}
	}
	var asks []metadata.Reassignment
	var slots []slot
	for ti, t := range req.Topics {
		rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			rp.Partition = p.Partition
			if count[t.Topic][p.Partition] > 1 {
				rp.ErrorCode = kerr.InvalidRequest.Code
				msg := "partition named more than once"
				rp.ErrorMessage = &msg
			} else {
				asks = append(asks, metadata.Reassignment{Topic: t.Topic, Partition: p.Partition,
					Replicas: p.Replicas, Cancel: p.Replicas == nil})
				slots = append(slots, slot{ti, len(rt.Partitions)})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if len(asks) > 0 {
		for i, err := range h.store.AlterPartitionReassignments(ctx, asks, allowRF) {
			if err != nil {
				rp := &resp.Topics[slots[i].t].Partitions[slots[i].p]
				rp.ErrorCode = errcode.Of(err)
				rp.ErrorMessage = errcode.Message(err)
			}
		}
		if err := h.replicas.Apply(h.store.Image()); err != nil {
			h.logger.Warn("applying reassignments", "err", err)
		}
	}
	return resp, nil
}
