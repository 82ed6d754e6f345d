package kafkaapi

// DescribeConfigs (key 32).
//
// Topics (resource type 2): every topic-level key with its resolved
// value and source (the topic's override, the cluster-wide dynamic
// default, the static broker key, or the built-in default); with
// IncludeSynonyms every place the value could come from, highest
// precedence first; with IncludeDocumentation (v3+) a line of
// documentation; the config type always (v3+). Brokers (type 4, named by node id): this broker's static
// configuration with the cluster-wide dynamic defaults and its own
// per-broker values applied, each key's source the highest of
// DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG,
// STATIC_BROKER_CONFIG and DEFAULT_CONFIG (an empty name describes the
// cluster-wide defaults the same way), and the Kafka keys it
// accepted and ignores with their values. Groups (type 32): the share
// group keys (share.*), each the group's own value or the broker's
// group.share.* one. ConfigNames narrows the keys; null means all. Other
// resource types get INVALID_REQUEST.

import (
	"context"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/config"
)

func init() {
	register(apiSpec{key: 32, min: 1, max: 4, handle: (*Handlers).handleDescribeConfigs})
}

func (h *Handlers) handleDescribeConfigs(_ context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	img := h.store.Image()
	for _, r := range req.Resources {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		var entries []config.ConfigEntry
		switch r.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			if !rc.AuthorizedTopic(kmsg.ACLOperationDescribeConfigs, r.ResourceName) {
				rr.ErrorCode = kerr.TopicAuthorizationFailed.Code
				break
			}
			t, ok := img.Topics[r.ResourceName]
			if !ok {
				rr.ErrorCode = kerr.UnknownTopicOrPartition.Code
				break
			}
			entries = h.cfg.TopicConfigEntriesFor(img.ClusterConfigs, img.BrokerConfigs[h.cfg.NodeID], t.Configs)
		case kmsg.ConfigResourceTypeBroker:
			if !rc.AuthorizedCluster(kmsg.ACLOperationDescribeConfigs) {
				rr.ErrorCode = kerr.ClusterAuthorizationFailed.Code
				break
			}
			if r.ResourceName == "" {
				entries = h.cfg.BrokerConfigEntriesIn(img.ClusterConfigs)
				break
			}
			if r.ResourceName != strconv.Itoa(int(h.cfg.NodeID)) {
				rr.ErrorCode = kerr.InvalidRequest.Code
				msg := "describing another broker's configs must be sent to that broker"
				rr.ErrorMessage = &msg
				break
			}
			entries = h.cfg.BrokerConfigEntriesFor(img.ClusterConfigs, img.BrokerConfigs[h.cfg.NodeID])
		case kmsg.ConfigResourceTypeGroupConfig:
			// Share group configs (KIP-932): DESCRIBE_CONFIGS on the group.
			if !rc.AuthorizedGroup(kmsg.ACLOperationDescribeConfigs, r.ResourceName) {
				rr.ErrorCode = kerr.GroupAuthorizationFailed.Code
				break
			}
			entries = h.cfg.ShareGroupConfigEntries(img.GroupConfigs[r.ResourceName])
		default:
			rr.ErrorCode = kerr.InvalidRequest.Code
		}
		for _, e := range entries {
			if r.ConfigNames != nil && !slices.Contains(r.ConfigNames, e.Name) {
				continue
			}
			c := kmsg.NewDescribeConfigsResponseResourceConfig()
			c.Name = e.Name
			if !e.Sensitive {
				v := e.Value
				c.Value = &v
			}
			c.ReadOnly, c.IsDefault, c.IsSensitive = e.ReadOnly, e.IsDefault, e.Sensitive
			c.Source = kmsg.ConfigSource(e.Source)
			c.ConfigType = kmsg.ConfigType(e.Type)
			if req.IncludeDocumentation {
				doc := e.Doc
				c.Documentation = &doc
			}
			if req.IncludeSynonyms {
				for _, syn := range e.Synonyms {
					s := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
					s.Name, s.Source = syn.Name, kmsg.ConfigSource(syn.Source)
					if !e.Sensitive {
						v := syn.Value
						s.Value = &v
					}
					c.ConfigSynonyms = append(c.ConfigSynonyms, s)
				}
			}
			rr.Configs = append(rr.Configs, c)
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp, nil
}
