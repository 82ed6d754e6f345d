package cluster

// DeleteGroups (key 42).
//
// A group can be deleted when it has no members (Empty, or Dead):
// NON_EMPTY_GROUP otherwise, GROUP_ID_NOT_FOUND for an unknown group. The
// group becomes Dead at once and tombstones for its offsets and its
// metadata are written; the response waits for them to be replicated and
// carries the write's error for the group if one failed.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiSpec{key: 42, min: 0, max: 2, handle: (*Node).handleDeleteGroups})
}

func (n *Node) handleDeleteGroups(_ context.Context, rc *RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DeleteGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	n.groups.deleteGroups(req.Groups, func(errs []error) {
		for i, id := range req.Groups {
			rg := kmsg.NewDeleteGroupsResponseGroup()
			rg.Group = id
			rg.ErrorCode = errorCode(errs[i])
			resp.Groups = append(resp.Groups, rg)
		}
		rc.Respond(resp)
	})
	return nil, nil
}
