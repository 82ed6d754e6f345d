package kafkaapi

// ListConfigResources (key 74), ListClientMetricsResources before Kafka
// 4.1 (KIP-1000, KIP-1142).
//
// Lists the resources that have configs, of the requested types (an
// empty list: every type the version knows): v0 knows CLIENT_METRICS
// only, v1 also TOPIC, BROKER, BROKER_LOGGER and GROUP; another type is
// UNSUPPORTED_VERSION, as in Kafka. kbroker's config resources are topics
// (every topic) and brokers (every registered broker, by id). It keeps no
// client-metrics, group or broker-logger configs (DescribeConfigs refuses
// those types), so none is listed. Needs DESCRIBE_CONFIGS on the CLUSTER
// (CLUSTER_AUTHORIZATION_FAILED).

import (
	"context"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/server"
)

func init() {
	register(apiSpec{key: 74, min: 0, max: 1, handle: (*Handlers).handleListConfigResources,
		actions: server.ClusterAction(kmsg.ACLOperationDescribeConfigs)})
}

// configResourceTypes are the types ListConfigResources knows in v0 and
// in v1, in the order listed.
var configResourceTypes = [][]kmsg.ConfigResourceType{
	{kmsg.ConfigResourceTypeClientMetrics},
	{kmsg.ConfigResourceTypeTopic, kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger,
		kmsg.ConfigResourceTypeGroupConfig, kmsg.ConfigResourceTypeClientMetrics},
}

func (h *Handlers) handleListConfigResources(_ context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ListConfigResourcesRequest)
	resp := req.ResponseKind().(*kmsg.ListConfigResourcesResponse)
	if !rc.AuthorizedCluster(kmsg.ACLOperationDescribeConfigs) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	known := configResourceTypes[min(int(req.Version), len(configResourceTypes)-1)]
	wanted := known
	if len(req.ResourceTypes) > 0 {
		wanted = nil
		for _, t := range req.ResourceTypes {
			if !slices.Contains(known, kmsg.ConfigResourceType(t)) {
				resp.ErrorCode = kerr.UnsupportedVersion.Code
				return resp, nil
			}
			wanted = append(wanted, kmsg.ConfigResourceType(t))
		}
	}
	img := h.image()
	add := func(name string, t kmsg.ConfigResourceType) {
		r := kmsg.NewListConfigResourcesResponseConfigResource()
		r.Name, r.Type = name, int8(t)
		resp.ConfigResources = append(resp.ConfigResources, r)
	}
	for _, t := range known {
		if !slices.Contains(wanted, t) {
			continue
		}
		switch t {
		case kmsg.ConfigResourceTypeTopic:
			for _, name := range img.SortedTopicNames() {
				add(name, t)
			}
		case kmsg.ConfigResourceTypeBroker:
			ids := make([]int, 0, len(img.Brokers))
			for id := range img.Brokers {
				ids = append(ids, int(id))
			}
			slices.Sort(ids)
			for _, id := range ids {
				add(strconv.Itoa(id), t)
			}
		}
	}
	return resp, nil
}
