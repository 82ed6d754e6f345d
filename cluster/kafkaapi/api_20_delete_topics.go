package kafkaapi

// DeleteTopics (key 20).
//
// Topics are named (all versions) or, from v6, given by id. The
// controller commits the deletion through Raft; every broker then drops
// its replicas of the topic and deletes their logs.
//
// Each deleted topic's partitions spend the client's
// controller_mutation_rate, strictly from v5 (quotas_mutation.go).

import (
	"context"
	"time"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiSpec{key: 20, min: 1, max: 6, handle: (*Handlers).handleDeleteTopics})
}

func (h *Handlers) handleDeleteTopics(ctx context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)

	type target struct {
		name string
		id   [16]byte
		err  int16
		msg  *string
	}
	img := h.store.Image()
	var targets []target
	if req.Version >= 6 {
		for _, t := range req.Topics {
			switch {
			case t.Topic != nil:
				tg := target{name: *t.Topic}
				if topic, ok := img.Topics[*t.Topic]; ok {
					tg.id = topic.ID
				}
				targets = append(targets, tg)
			default:
				topic, ok := img.TopicsByID[t.TopicID]
				if !ok {
					targets = append(targets, target{id: t.TopicID, err: kerr.UnknownTopicID.Code})
					continue
				}
				if !rc.AuthorizedTopic(kmsg.ACLOperationDescribe, topic.Name) {
					// Kafka does not tell who may not describe a topic
					// that an id names it.
					targets = append(targets, target{id: t.TopicID, err: kerr.UnknownTopicID.Code})
					continue
				}
				targets = append(targets, target{name: topic.Name, id: t.TopicID})
			}
		}
	} else {
		for _, name := range req.TopicNames {
			tg := target{name: name}
			if topic, ok := img.Topics[name]; ok {
				tg.id = topic.ID
			}
			targets = append(targets, tg)
		}
	}

	for i := range targets {
		if targets[i].err == 0 && !rc.AuthorizedTopic(kmsg.ACLOperationDelete, targets[i].name) {
			targets[i].err = kerr.TopicAuthorizationFailed.Code
		}
	}
	// The quota is asked for each topic that exists and is named once,
	// in request order: the others fail in the controller without
	// deleting anything, as Kafka's deleteTopic fails them before it
	// asks.
	if mq := rc.MutationQuota(5); mq != nil {
		seen := make(map[string]int, len(targets))
		for _, t := range targets {
			if t.err == 0 {
				seen[t.name]++
			}
		}
		for i, t := range targets {
			topic, ok := img.Topics[t.name]
			if t.err != 0 || !ok || seen[t.name] > 1 {
				continue
			}
			if err := mq.Record(len(topic.Partitions)); err != nil {
				targets[i].err, targets[i].msg = errcode.Of(err), errcode.Message(err)
			}
		}
	}
	var names []string
	var idx []int
	for i, t := range targets {
		if t.err == 0 {
			names = append(names, t.name)
			idx = append(idx, i)
		}
	}
	timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if len(names) > 0 {
		errs := h.store.DeleteTopics(ctx, names)
		for j, err := range errs {
			if err != nil {
				targets[idx[j]].err = errcode.Of(err)
			}
		}
		if err := h.replicas.Apply(h.store.Image()); err != nil {
			h.logger.Warn("removing deleted partitions", "err", err)
		}
	}

	for _, t := range targets {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		if t.name != "" {
			name := t.name
			rt.Topic = &name
		}
		rt.TopicID = t.id
		rt.ErrorCode = t.err
		rt.ErrorMessage = t.msg
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
