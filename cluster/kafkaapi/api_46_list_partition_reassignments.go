package kafkaapi

// ListPartitionReassignments (key 46).
//
// The reassignments in progress, from this broker's metadata image: each
// partition being reassigned with its replicas and the replicas being
// added and removed. Null topics lists every one; partitions asked for
// that are not being reassigned (or do not exist) are left out, as in
// Kafka. It needs DESCRIBE on the CLUSTER.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/metadata"
)

func init() {
	register(apiSpec{key: 46, min: 0, max: 0, handle: (*Handlers).handleListPartitionReassignments, actions: server.ClusterAction(kmsg.ACLOperationDescribe)})
}

func (h *Handlers) handleListPartitionReassignments(_ context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ListPartitionReassignmentsRequest)
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	if !rc.AuthorizedCluster(kmsg.ACLOperationDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	listReassignments(h.store.Image(), req, resp)
	return resp, nil
}

// listReassignments fills resp with the reassignments of img req asks for.
func listReassignments(img *metadata.Image, req *kmsg.ListPartitionReassignmentsRequest, resp *kmsg.ListPartitionReassignmentsResponse) {
	describe := func(rt *kmsg.ListPartitionReassignmentsResponseTopic, p *metadata.Partition) {
		rp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
		rp.Partition = p.ID
		rp.Replicas = slices.Clone(p.Replicas)
		rp.AddingReplicas = slices.Clone(p.AddingReplicas)
		rp.RemovingReplicas = slices.Clone(p.RemovingReplicas)
		if rp.AddingReplicas == nil {
			rp.AddingReplicas = []int32{}
		}
		if rp.RemovingReplicas == nil {
			rp.RemovingReplicas = []int32{}
		}
		rt.Partitions = append(rt.Partitions, rp)
	}
	if req.Topics == nil {
		// Every partition is looked at once: sorted names shared with
		// the image, no list of partition ids per topic.
		for _, name := range img.SortedTopicNames() {
			t := img.Topics[name]
			rt := kmsg.NewListPartitionReassignmentsResponseTopic()
			rt.Topic = t.Name
			for _, p := range t.Partitions {
				if p.Reassigning() {
					describe(&rt, p)
				}
			}
			if len(rt.Partitions) > 0 {
				resp.Topics = append(resp.Topics, rt)
			}
		}
		return
	}
	for _, rq := range req.Topics {
		t, ok := img.Topics[rq.Topic]
		if !ok {
			continue
		}
		rt := kmsg.NewListPartitionReassignmentsResponseTopic()
		rt.Topic = t.Name
		for _, id := range rq.Partitions {
			if id >= 0 && int(id) < len(t.Partitions) && t.Partitions[id].Reassigning() {
				describe(&rt, t.Partitions[id])
			}
		}
		if len(rt.Partitions) > 0 {
			resp.Topics = append(resp.Topics, rt)
		}
	}
}
