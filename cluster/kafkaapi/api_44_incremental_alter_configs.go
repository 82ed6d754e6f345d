package kafkaapi

// IncrementalAlterConfigs (key 44).
//
// Topic configs (resource type 2): SET and DELETE, and APPEND/SUBTRACT for
// list-valued keys only (cleanup.policy, the throttled replica lists;
// INVALID_CONFIG for others, as Kafka), validated and committed by the
// controller; validateOnly checks without committing. Brokers (type 4):
// the cluster-wide default (empty name) of the broker keys behind topic
// configs (log.retention.ms, compression.type, min.insync.replicas, ...)
// and the other dynamic broker keys (replication throttle rates, the log
// cleaner's threads, backoff, dedupe buffer and I/O rate)
// can be set and deleted at runtime; other broker keys are refused
// (INVALID_CONFIG). The same keys can be set per broker (the resource
// named by a broker id, Kafka's DYNAMIC_BROKER_CONFIG, over the cluster
// default on that broker only), through the broker named, as Kafka's
// admin clients send them: a name that is not this broker's id is
// INVALID_REQUEST ("Unexpected broker id ..."), as in Kafka. Groups
// (type 32): a share group's share.* keys (SET and DELETE).

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/metadata"
)

func init() {
	register(apiSpec{key: 44, min: 0, max: 1, handle: (*Handlers).handleIncrementalAlterConfigs})
}

func (h *Handlers) handleIncrementalAlterConfigs(ctx context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, r := range req.Resources {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		err := h.alterConfigResource(ctx, rc, r.ResourceType, r.ResourceName, req.ValidateOnly, func(overrides map[string]string) (configChange, error) {
			if r.ResourceType == kmsg.ConfigResourceTypeTopic {
				return h.incrementalTopicChange(r, overrides)
			}
			return incrementalClusterChange(r)
		})
		if err != nil {
			rr.ErrorCode = errcode.Of(err)
			rr.ErrorMessage = errcode.Message(err)
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp, nil
}

// configChange is what an alter request does to one resource's dynamic
// configs: the keys it sets and the keys it removes.
type configChange struct {
	set    map[string]string
	remove []string
}

// alterConfigResource is the part IncrementalAlterConfigs and the legacy
// AlterConfigs share: authorization (ALTER_CONFIGS on the topic, else
// TOPIC_AUTHORIZATION_FAILED; on the cluster for brokers, else
// CLUSTER_AUTHORIZATION_FAILED), the resources kbroker can alter, the
// change the request makes (change, given the resource's current dynamic
// configs), its validation, and its commit through the controller unless
// validateOnly.
func (h *Handlers) alterConfigResource(ctx context.Context, rc *server.RequestContext, typ kmsg.ConfigResourceType, name string, validateOnly bool,
	change func(overrides map[string]string) (configChange, error)) error {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		if !rc.AuthorizedTopic(kmsg.ACLOperationAlterConfigs, name) {
			return kerr.TopicAuthorizationFailed
		}
		t, ok := h.store.Image().Topics[name]
		if !ok {
			return fmt.Errorf("%w: %q", metadata.ErrUnknownTopic, name)
		}
		c, err := change(t.Configs)
		if err != nil {
			return err
		}
		if err := h.cfg.ValidateTopicConfigs(c.set); err != nil {
			return fmt.Errorf("%w: %w", metadata.ErrInvalidConfig, err)
		}
		if validateOnly {
			return nil
		}
		if err := h.store.AlterTopicConfigs(ctx, name, c.set, c.remove); err != nil {
			return err
		}
	case kmsg.ConfigResourceTypeBroker:
		if !rc.AuthorizedCluster(kmsg.ACLOperationAlterConfigs) {
			return kerr.ClusterAuthorizationFailed
		}
		if name != "" {
			id, err := h.brokerResourceID(name)
			if err != nil {
				return err
			}
			c, err := change(h.store.Image().BrokerConfigs[id])
			if err != nil {
				return err
			}
			if err := h.cfg.ValidateClusterConfigs(c.set); err != nil {
				return fmt.Errorf("%w: %w", metadata.ErrInvalidConfig, err)
			}
			if validateOnly {
				return nil
			}
			if err := h.store.AlterBrokerConfigs(ctx, id, c.set, c.remove); err != nil {
				return err
			}
			break
		}
		c, err := change(h.store.Image().ClusterConfigs)
		if err != nil {
			return err
		}
		if err := h.cfg.ValidateClusterConfigs(c.set); err != nil {
			return fmt.Errorf("%w: %w", metadata.ErrInvalidConfig, err)
		}
		if validateOnly {
			return nil
		}
		if err := h.store.AlterClusterConfigs(ctx, c.set, c.remove); err != nil {
			return err
		}
	case kmsg.ConfigResourceTypeGroupConfig:
		// Share group configs: ALTER_CONFIGS on the group, Kafka's
		// GroupConfig keys within the broker's bounds.
		if !rc.AuthorizedGroup(kmsg.ACLOperationAlterConfigs, name) {
			return kerr.GroupAuthorizationFailed
		}
		if name == "" {
			return fmt.Errorf("%w: a group config needs a group id", kerr.InvalidRequest)
		}
		c, err := change(h.store.Image().GroupConfigs[name])
		if err != nil {
			return err
		}
		if err := h.cfg.ValidateShareGroupConfigs(c.set); err != nil {
			return fmt.Errorf("%w: %w", metadata.ErrInvalidConfig, err)
		}
		for _, k := range c.remove {
			if !slices.Contains(config.ShareGroupConfigKeys, k) {
				return fmt.Errorf("%w: %s is not a group config", metadata.ErrInvalidConfig, k)
			}
		}
		if validateOnly {
			return nil
		}
		return h.store.AlterGroupConfigs(ctx, name, c.set, c.remove)
	default:
		return fmt.Errorf("%w: resource type %d", kerr.InvalidRequest, typ)
	}
	return h.replicas.Apply(h.store.Image())
}

// brokerResourceID is the broker id a BROKER resource with a non-empty
// name names, which must be this broker's: as Kafka's
// ConfigAdminManager.validateResourceNameIsCurrentNodeId, a per-broker
// config is altered through the broker it is for (admin clients send it
// there), so another id, registered or not, is INVALID_REQUEST.
func (h *Handlers) brokerResourceID(name string) (int32, error) {
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%w: Node id must be an integer, but it is: %s", kerr.InvalidRequest, name)
	}
	if int32(id) != h.cfg.NodeID {
		return 0, fmt.Errorf("%w: Unexpected broker id, expected %d, but received %s", kerr.InvalidRequest, h.cfg.NodeID, name)
	}
	return int32(id), nil
}

// incrementalTopicChange applies a topic's SET, DELETE, APPEND and
// SUBTRACT operations to its current configs.
func (h *Handlers) incrementalTopicChange(r kmsg.IncrementalAlterConfigsRequestResource, overrides map[string]string) (configChange, error) {
	set := map[string]string{}
	var remove []string
	current := func(name string) string {
		if v, ok := set[name]; ok {
			return v
		}
		if v, ok := overrides[name]; ok {
			return v
		}
		img := h.store.Image()
		for _, e := range h.cfg.TopicConfigEntriesFor(img.ClusterConfigs, img.BrokerConfigs[h.cfg.NodeID], nil) {
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
				return configChange{}, fmt.Errorf("%w: %s: APPEND and SUBTRACT apply only to list configs", metadata.ErrInvalidConfig, c.Name)
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
			return configChange{}, fmt.Errorf("%w: config operation %d", kerr.InvalidRequest, c.Op)
		}
	}
	return configChange{set: set, remove: remove}, nil
}

// incrementalClusterChange applies SET and DELETE to the cluster-wide
// dynamic broker defaults.
func incrementalClusterChange(r kmsg.IncrementalAlterConfigsRequestResource) (configChange, error) {
	set := map[string]string{}
	var remove []string
	for _, c := range r.Configs {
		switch c.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			if c.Value == nil {
				return configChange{}, fmt.Errorf("%w: %s: no value", metadata.ErrInvalidConfig, c.Name)
			}
			set[c.Name] = *c.Value
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(set, c.Name)
			remove = append(remove, c.Name)
		default:
			return configChange{}, fmt.Errorf("%w: config operation %d on a broker config", kerr.InvalidRequest, c.Op)
		}
	}
	return configChange{set: set, remove: remove}, nil
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
