package cluster

// CreateTopics (key 19).
//
// Any broker accepts the request and hands it to the controller (this
// node's metadata store; forwarding to a remote controller comes with the
// multi-node quorum). The controller validates names, partition counts,
// replication factor against the live brokers, explicit assignments and
// config overrides, places the replicas, and commits the topic through
// Raft; the response is sent once it is applied. validateOnly runs the
// checks and commits nothing. From v5 the response carries the partition
// count, replication factor and resolved configs; from v7 the topic id.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/metadata"
)

func init() {
	register(apiSpec{key: 19, min: 2, max: 7, handle: (*Node).handleCreateTopics})
}

func (n *Node) handleCreateTopics(ctx context.Context, _ *RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)

	specs := make([]metadata.TopicSpec, len(req.Topics))
	for i, t := range req.Topics {
		spec := metadata.TopicSpec{
			Name:              t.Topic,
			NumPartitions:     t.NumPartitions,
			ReplicationFactor: t.ReplicationFactor,
			Configs:           make(map[string]string, len(t.Configs)),
		}
		if len(t.ReplicaAssignment) > 0 {
			spec.Assignments = make(map[int32][]int32, len(t.ReplicaAssignment))
			for _, a := range t.ReplicaAssignment {
				spec.Assignments[a.Partition] = a.Replicas
			}
		}
		for _, c := range t.Configs {
			if c.Value != nil {
				spec.Configs[c.Name] = *c.Value
			}
		}
		specs[i] = spec
	}

	timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	errs := n.store.CreateTopics(ctx, specs, req.ValidateOnly)
	if !req.ValidateOnly {
		if err := n.replicas.Apply(n.store.Image()); err != nil {
			n.logger.Warn("opening created partitions", "err", err)
		}
	}

	img := n.store.Image()
	for i, t := range req.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = t.Topic
		rt.NumPartitions, rt.ReplicationFactor = -1, -1
		if err := errs[i]; err != nil {
			rt.ErrorCode = errorCode(err)
			rt.ErrorMessage = errorMessage(err)
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		if created, ok := img.Topics[t.Topic]; ok && !req.ValidateOnly {
			rt.TopicID = created.ID
			rt.NumPartitions = int32(len(created.Partitions))
			if len(created.Partitions) > 0 {
				rt.ReplicationFactor = int16(len(created.Partitions[0].Replicas))
			}
			for _, e := range n.cfg.TopicConfigEntriesIn(img.ClusterConfigs, created.Configs) {
				c := kmsg.NewCreateTopicsResponseTopicConfig()
				c.Name = e.Name
				v := e.Value
				c.Value = &v
				c.ReadOnly, c.Source, c.IsSensitive = e.ReadOnly, e.Source, e.Sensitive
				rt.Configs = append(rt.Configs, c)
			}
		} else if req.ValidateOnly {
			rt.NumPartitions = t.NumPartitions
			rt.ReplicationFactor = t.ReplicationFactor
		} else {
			rt.ErrorCode = kerr.UnknownServerError.Code
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
