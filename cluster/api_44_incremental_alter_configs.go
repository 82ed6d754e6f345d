package cluster

// IncrementalAlterConfigs (key 44), v0–1.
//
// Topic configs (resource type 2): SET and DELETE, and APPEND/SUBTRACT for
// list-valued keys (cleanup.policy), validated and committed by the
// controller; validateOnly checks without committing. Broker configs are
// static in kbroker (set at start): altering them is refused with
// INVALID_REQUEST and a message saying so.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/metadata"
)

func (n *Node) handleIncrementalAlterConfigs(ctx context.Context, _ *RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, r := range req.Resources {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		var err error
		switch r.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			err = n.alterTopicConfigs(ctx, r, req.ValidateOnly)
		case kmsg.ConfigResourceTypeBroker:
			err = fmt.Errorf("%w: broker configs are static in kbroker; set them in the config file, KBROKER_* or --set", kerr.InvalidRequest)
		default:
			err = fmt.Errorf("%w: resource type %d", kerr.InvalidRequest, r.ResourceType)
		}
		if err != nil {
			rr.ErrorCode = errorCode(err)
			rr.ErrorMessage = errorMessage(err)
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp, nil
}

func (n *Node) alterTopicConfigs(ctx context.Context, r kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) error {
	t, ok := n.store.Image().Topics[r.ResourceName]
	if !ok {
		return fmt.Errorf("%w: %q", metadata.ErrUnknownTopic, r.ResourceName)
	}
	set := map[string]string{}
	var remove []string
	current := func(name string) string {
		if v, ok := set[name]; ok {
			return v
		}
		if v, ok := t.Configs[name]; ok {
			return v
		}
		for _, e := range n.cfg.TopicConfigEntries(nil) {
			if e.Name == name {
				return e.Value
			}
		}
		return ""
	}
	for _, c := range r.Configs {
		value := ""
		if c.Value != nil {
			value = *c.Value
		}
		switch c.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			set[c.Name] = value
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(set, c.Name)
			remove = append(remove, c.Name)
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			items := splitList(current(c.Name))
			for _, v := range splitList(value) {
				has := slices.Contains(items, v)
				if c.Op == kmsg.IncrementalAlterConfigOpAppend && !has {
					items = append(items, v)
				}
				if c.Op == kmsg.IncrementalAlterConfigOpSubtract && has {
					items = slices.DeleteFunc(items, func(s string) bool { return s == v })
				}
			}
			set[c.Name] = strings.Join(items, ",")
		default:
			return fmt.Errorf("%w: config operation %d", kerr.InvalidRequest, c.Op)
		}
	}
	if err := config.ValidateTopicConfigs(set); err != nil {
		return fmt.Errorf("%w: %w", metadata.ErrInvalidConfig, err)
	}
	if validateOnly {
		return nil
	}
	if err := n.store.AlterTopicConfigs(ctx, r.ResourceName, set, remove); err != nil {
		return err
	}
	return n.replicas.Apply(n.store.Image())
}

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
