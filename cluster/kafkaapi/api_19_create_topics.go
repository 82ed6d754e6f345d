package kafkaapi

// CreateTopics (key 19).
//
// Any broker accepts the request and hands it to the active controller
// (forwarded over the controller listener when that is another node). The
// controller validates names, partition counts,
// replication factor against the live brokers, explicit assignments and
// config overrides, places the replicas, and commits the topic through
// Raft; the response is sent once it is applied. validateOnly runs the
// checks and commits nothing. From v5 the response carries the partition
// count, replication factor and resolved configs; from v7 the topic id.
//
// Needs CREATE on the CLUSTER or on the topic (TOPIC_AUTHORIZATION_FAILED);
// the resolved configs are returned only with DESCRIBE_CONFIGS on the
// topic (else ConfigErrorCode TOPIC_AUTHORIZATION_FAILED), as in Kafka.
//
// Each topic's partitions spend the client's controller_mutation_rate,
// strictly from v6 (quotas_mutation.go).

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/metadata"
)

func init() {
	register(apiSpec{key: 19, min: 2, max: 7, handle: (*Handlers).handleCreateTopics, actions: server.ClusterAction(kmsg.ACLOperationCreate)})
}

func (h *Handlers) handleCreateTopics(ctx context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)

	clusterCreate := rc.AuthorizedCluster(kmsg.ACLOperationCreate)
	errs := make([]error, len(req.Topics))
	var specs []metadata.TopicSpec
	var at []int // index in req.Topics of each spec
	for i, t := range req.Topics {
		if !clusterCreate && !rc.AuthorizedTopic(kmsg.ACLOperationCreate, t.Topic) {
			errs[i] = fmt.Errorf("%w: authorization failed", kerr.TopicAuthorizationFailed)
			continue
		}
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
		specs = append(specs, spec)
		at = append(at, i)
	}

	timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if mq := rc.MutationQuota(6); mq != nil && len(specs) > 0 && !req.ValidateOnly {
		specs, at = h.spendCreateTopicsQuota(ctx, mq, specs, at, errs)
	}
	if len(specs) > 0 {
		for j, err := range h.store.CreateTopics(ctx, specs, req.ValidateOnly) {
			errs[at[j]] = err
		}
	}
	if !req.ValidateOnly && len(specs) > 0 {
		// The answer comes from the local image, which must hold the
		// topics just created: a node that forwarded the creation to the
		// controller may not have applied it yet.
		img, behind := h.store.Image(), false
		for j, sp := range specs {
			behind = behind || errs[at[j]] == nil && img.Topics[sp.Name] == nil
		}
		if behind {
			if err := h.store.CatchUp(ctx); err != nil {
				h.logger.Warn("catching up with the created topics", "err", err)
			}
		}
		if err := h.replicas.Apply(h.store.Image()); err != nil {
			h.logger.Warn("opening created partitions", "err", err)
		}
	}

	img := h.store.Image()
	for i, t := range req.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = t.Topic
		rt.NumPartitions, rt.ReplicationFactor = -1, -1
		if err := errs[i]; err != nil {
			rt.ErrorCode = errcode.Of(err)
			rt.ErrorMessage = errcode.Message(err)
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		if created, ok := img.Topics[t.Topic]; ok && !req.ValidateOnly {
			rt.TopicID = created.ID
			rt.NumPartitions = int32(len(created.Partitions))
			if len(created.Partitions) > 0 {
				rt.ReplicationFactor = int16(len(created.Partitions[0].Replicas))
			}
			if !rc.AuthorizedTopic(kmsg.ACLOperationDescribeConfigs, t.Topic) {
				rt.ConfigErrorCode = kerr.TopicAuthorizationFailed.Code
				resp.Topics = append(resp.Topics, rt)
				continue
			}
			for _, e := range h.cfg.TopicConfigEntriesFor(img.ClusterConfigs, img.BrokerConfigs[h.cfg.NodeID], created.Configs) {
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

// spendCreateTopicsQuota asks the mutation quota for the partitions of
// each topic, in request order, and returns the specs (and their indexes
// in the request) that may be created. As Kafka asks the quota only for
// a topic that passed validation, the specs are first validated by the
// controller (a second round trip, made only for clients under a
// controller_mutation_rate); a topic that fails it, or the quota, gets
// its error in errs.
func (h *Handlers) spendCreateTopicsQuota(ctx context.Context, mq *server.MutationQuota, specs []metadata.TopicSpec, at []int, errs []error) ([]metadata.TopicSpec, []int) {
	valid := h.store.CreateTopics(ctx, specs, true)
	var keepSpecs []metadata.TopicSpec
	var keepAt []int
	for j, spec := range specs {
		err := valid[j]
		if err == nil {
			err = mq.Record(h.partitionsCreated(spec))
		}
		if err != nil {
			errs[at[j]] = err
			continue
		}
		keepSpecs = append(keepSpecs, spec)
		keepAt = append(keepAt, at[j])
	}
	return keepSpecs, keepAt
}

// partitionsCreated is the partition count a valid spec creates: its
// assignment's, else its own, else num.partitions (this broker's value,
// which is the controller's in a uniformly configured cluster).
func (h *Handlers) partitionsCreated(spec metadata.TopicSpec) int {
	switch {
	case len(spec.Assignments) > 0:
		return len(spec.Assignments)
	case spec.NumPartitions > 0:
		return int(spec.NumPartitions)
	default:
		return int(h.cfg.NumPartitions)
	}
}
