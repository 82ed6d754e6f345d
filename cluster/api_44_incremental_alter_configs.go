package cluster

// IncrementalAlterConfigs (key 44).
//
// Topic configs (resource type 2): SET and DELETE, and APPEND/SUBTRACT for
// list-valued keys only (cleanup.policy, the throttled replica lists;
// INVALID_CONFIG for others, as Kafka), validated and committed by the
// controller; validateOnly checks without committing. Brokers (type 4):
// the cluster-wide default (empty name) of the broker keys behind topic
// configs (log.retention.ms, compression.type, min.insync.replicas, ...)
// can be set and deleted at runtime; other broker keys and per-broker
// overrides are refused (INVALID_CONFIG / INVALID_REQUEST).

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

func init() {
	register(apiSpec{key: 44, min: 0, max: 1, handle: (*Node).handleIncrementalAlterConfigs})
}

func (n *Node) handleIncrementalAlterConfigs(ctx context.Context, rc *RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
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
			if !rc.AuthorizedTopic(kmsg.ACLOperationAlterConfigs, r.ResourceName) {
				err = kerr.TopicAuthorizationFailed
				break
			}
			err = n.alterTopicConfigs(ctx, r, req.ValidateOnly)
		case kmsg.ConfigResourceTypeBroker:
			if !rc.AuthorizedCluster(kmsg.ACLOperationAlterConfigs) {
				err = kerr.ClusterAuthorizationFailed
				break
			}
			if r.ResourceName != "" {
				err = fmt.Errorf("%w: per-broker dynamic configs are not supported; alter the cluster-wide default (the broker resource with an empty name) or set the key in the broker's config", kerr.InvalidRequest)
				break
			}
			err = n.alterClusterConfigs(ctx, r, req.ValidateOnly)
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
		for _, e := range n.cfg.TopicConfigEntriesIn(n.store.Image().ClusterConfigs, nil) {
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
			if !config.IsListTopicKey(c.Name) {
				// As Kafka: only LIST keys take APPEND and SUBTRACT.
				return fmt.Errorf("%w: %s: APPEND and SUBTRACT apply only to list configs", metadata.ErrInvalidConfig, c.Name)
			}
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
	if err := n.cfg.ValidateTopicConfigs(set); err != nil {
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

// alterClusterConfigs applies SET and DELETE to the cluster-wide dynamic
// broker defaults.
func (n *Node) alterClusterConfigs(ctx context.Context, r kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) error {
	set := map[string]string{}
	var remove []string
	for _, c := range r.Configs {
		switch c.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			if c.Value == nil {
				return fmt.Errorf("%w: %s: no value", metadata.ErrInvalidConfig, c.Name)
			}
			set[c.Name] = *c.Value
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(set, c.Name)
			remove = append(remove, c.Name)
		default:
			return fmt.Errorf("%w: config operation %d on a broker config", kerr.InvalidRequest, c.Op)
		}
	}
	if err := n.cfg.ValidateClusterConfigs(set); err != nil {
		return fmt.Errorf("%w: %w", metadata.ErrInvalidConfig, err)
	}
	if validateOnly {
		return nil
	}
	if err := n.store.AlterClusterConfigs(ctx, set, remove); err != nil {
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
