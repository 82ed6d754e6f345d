package kafkaapi

// AlterConfigs (key 33).
//
// The legacy form of IncrementalAlterConfigs, still sent by old admin
// clients: a resource's configs are replaced as a whole, as Kafka does, so
// every dynamic config of the resource the request does not name is
// removed (a null value removes its key too). The resources, validation,
// authorization and commit are IncrementalAlterConfigs'
// (alterConfigResource): topics, the cluster-wide broker default (the
// broker resource with an empty name) and this broker's own per-broker
// values (the resource named by its id).
//
// The current configs are read from this broker's metadata image and the
// change is committed as sets and removals: an alteration of the same
// resource committed in between by another client can survive the
// replacement, where Kafka's controller replaces atomically.

import (
	"context"
	"slices"
	"time"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiSpec{key: 33, min: 0, max: 2, handle: (*Handlers).handleAlterConfigs})
}

func (h *Handlers) handleAlterConfigs(ctx context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, r := range req.Resources {
		rr := kmsg.NewAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		err := h.alterConfigResource(ctx, rc, r.ResourceType, r.ResourceName, req.ValidateOnly, func(overrides map[string]string) (configChange, error) {
			return replaceConfigs(r.Configs, overrides), nil
		})
		if err != nil {
			rr.ErrorCode = errcode.Of(err)
			rr.ErrorMessage = errcode.Message(err)
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp, nil
}

// replaceConfigs is the change that makes configs a resource's whole set
// of dynamic configs, given its current ones.
func replaceConfigs(configs []kmsg.AlterConfigsRequestResourceConfig, current map[string]string) configChange {
	c := configChange{set: map[string]string{}}
	for _, e := range configs {
		if e.Value == nil {
			delete(c.set, e.Name)
			continue
		}
		c.set[e.Name] = *e.Value
	}
	for name := range current {
		if _, kept := c.set[name]; !kept {
			c.remove = append(c.remove, name)
		}
	}
	slices.Sort(c.remove) // the same request commits the same records
	return c
}
