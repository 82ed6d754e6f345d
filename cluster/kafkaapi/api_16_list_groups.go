package kafkaapi

// ListGroups (key 16).
//
// Lists the groups this broker coordinates (clients ask every broker).
// v4 filters by state (case-insensitive, as Kafka), v5 by type: "classic",
// "consumer" (KIP-848) or "share" (KIP-932; share groups answer with the
// protocol type "share" and the states Empty or Stable).

import (
	"context"
	"strings"

	"github.com/kbroker/kbroker/cluster/groupcoord"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiSpec{key: 16, min: 0, max: 5, handle: (*Handlers).handleListGroups, actions: server.ClusterAction(kmsg.ACLOperationDescribe)})
}

func (h *Handlers) handleListGroups(_ context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ListGroupsRequest)
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	matches := func(filter []string, v string) bool {
		if len(filter) == 0 {
			return true
		}
		for _, f := range filter {
			if strings.EqualFold(f, v) {
				return true
			}
		}
		return false
	}
	// DESCRIBE on the cluster lists every group; without it, the groups
	// the principal may DESCRIBE.
	all := rc.AuthorizedCluster(kmsg.ACLOperationDescribe)
	groups := h.groups.List()
	for _, g := range h.shares.List() {
		groups = append(groups, groupcoord.GroupOverview{ID: g.ID, ProtocolType: "share", State: g.State, Type: "share"})
	}
	for _, g := range groups {
		if !matches(req.StatesFilter, g.State) || !matches(req.TypesFilter, g.Type) {
			continue
		}
		if !all && !rc.AuthorizedGroup(kmsg.ACLOperationDescribe, g.ID) {
			continue
		}
		rg := kmsg.NewListGroupsResponseGroup()
		rg.Group = g.ID
		rg.ProtocolType = g.ProtocolType
		rg.GroupState = g.State
		rg.GroupType = g.Type
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}
