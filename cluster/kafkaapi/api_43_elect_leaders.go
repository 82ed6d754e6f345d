package kafkaapi

// ElectLeaders (key 43).
//
// An operator's leader election: preferred (leadership back to the first
// replica when it is alive and in the ISR) or, from v1, unclean (a leader
// for a partition without one, from outside the ISR if need be). Null
// topics means every partition, and the answer then lists only the
// partitions whose election was needed, as Kafka's does. The controller
// commits each election as a partition change (metadata.ElectLeaders).
// It needs ALTER on the CLUSTER.

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
	register(apiSpec{key: 43, min: 0, max: 2, handle: (*Handlers).handleElectLeaders, actions: server.ClusterAction(kmsg.ACLOperationAlter)})
}

// electionOutcomeErrors maps what became of an election to Kafka's code.
var electionOutcomeErrors = map[metadata.ElectionOutcome]*kerr.Error{
	metadata.ElectionNotNeeded:           kerr.ElectionNotNeeded,
	metadata.PreferredLeaderNotAvailable: kerr.PreferredLeaderNotAvailable,
	metadata.EligibleLeadersNotAvailable: kerr.EligibleLeadersNotAvailable,
	metadata.ElectionUnknownPartition:    kerr.UnknownTopicOrPartition,
	metadata.ElectionFailed:              kerr.UnknownServerError,
}

func (h *Handlers) handleElectLeaders(ctx context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ElectLeadersRequest)
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	typ := metadata.ElectionType(req.ElectionType)
	if req.Version == 0 {
		typ = metadata.ElectPreferred // v0 has no election type
	}

	// Refusals that apply to the whole request answer every partition
	// named with the same code (and, from v1, the top-level code).
	refuseAll := func(code int16, msg string) kmsg.Response {
		resp.ErrorCode = code
		for _, t := range req.Topics {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewElectLeadersResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, code
				rp.ErrorMessage = &msg
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	if !rc.AuthorizedCluster(kmsg.ACLOperationAlter) {
		return refuseAll(kerr.ClusterAuthorizationFailed.Code, "ElectLeaders needs ALTER on the CLUSTER"), nil
	}
	if typ != metadata.ElectPreferred && typ != metadata.ElectUnclean {
		return refuseAll(kerr.InvalidRequest.Code, "unknown election type"), nil
	}

	// A partition named twice is answered INVALID_REQUEST and not
	// elected, as Kafka does; the others are elected.
	var asked []metadata.TopicPartitions
	if req.Topics != nil {
		count := map[string]map[int32]int{}
		for _, t := range req.Topics {
			if count[t.Topic] == nil {
				count[t.Topic] = map[int32]int{}
			}
			for _, p := range t.Partitions {
				count[t.Topic][p]++
			}
		}
		asked = []metadata.TopicPartitions{}
		var dups []metadata.TopicPartitions
		for _, t := range req.Topics {
			var ok, dup []int32
			for _, p := range t.Partitions {
				switch c := count[t.Topic][p]; {
				case c == 1:
					ok = append(ok, p)
				case c > 1:
					dup = append(dup, p)
					count[t.Topic][p] = 0 // answer a duplicate once
				}
			}
			if len(ok) > 0 {
				asked = append(asked, metadata.TopicPartitions{Topic: t.Topic, Partitions: ok})
			}
			if len(dup) > 0 {
				dups = append(dups, metadata.TopicPartitions{Topic: t.Topic, Partitions: dup})
			}
		}
		for _, d := range dups {
			msg := "partition named more than once"
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = d.Topic
			for _, p := range d.Partitions {
				rp := kmsg.NewElectLeadersResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.ErrorMessage = p, kerr.InvalidRequest.Code, &msg
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
	}

	timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var results []metadata.ElectionResult
	if asked == nil || len(asked) > 0 {
		var err error
		results, err = h.store.ElectLeaders(ctx, typ, asked)
		if err != nil {
			// The controller could not be reached or raft failed: every
			// partition gets the reason, which clients retry on.
			return refuseAll(errcode.Of(err), *errcode.Message(err)), nil
		}
	}
	byTopic := map[string]int{} // index in resp.Topics of a topic's results
	for _, r := range results {
		i, ok := byTopic[r.Topic]
		if !ok {
			i = len(resp.Topics)
			byTopic[r.Topic] = i
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = r.Topic
			resp.Topics = append(resp.Topics, rt)
		}
		rp := kmsg.NewElectLeadersResponseTopicPartition()
		rp.Partition = r.Partition
		if code, failed := electionOutcomeErrors[r.Outcome]; failed {
			rp.ErrorCode = code.Code
			msg := r.Message
			if msg == "" {
				msg = code.Description
			}
			rp.ErrorMessage = &msg
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	if len(results) > 0 {
		if err := h.replicas.Apply(h.store.Image()); err != nil {
			h.logger.Warn("applying elected leaders", "err", err)
		}
	}
	return resp, nil
}
