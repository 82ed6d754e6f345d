package cluster

// ListGroups (key 16).
//
// Lists the groups this broker coordinates (clients ask every broker).
// v4 filters by state (case-insensitive, as Kafka), v5 by type: every
// group here is "classic".

import (
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/group"
)

func init() {
	register(apiSpec{key: 16, min: 0, max: 5, handle: (*Node).handleListGroups})
}

func (n *Node) handleListGroups(_ context.Context, _ *RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
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
	c := n.groups
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, g := range c.listGroupsLocked() {
		if g.State() == group.Dead {
			continue
		}
		if !matches(req.StatesFilter, g.State().String()) || !matches(req.TypesFilter, "classic") {
			continue
		}
		rg := kmsg.NewListGroupsResponseGroup()
		rg.Group = g.ID
		rg.ProtocolType = g.ProtocolType()
		rg.GroupState = g.State().String()
		rg.GroupType = "classic"
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}
