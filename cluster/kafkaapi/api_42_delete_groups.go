package kafkaapi

// DeleteGroups (key 42).
//
// A group can be deleted when it has no members (Empty, or Dead):
// NON_EMPTY_GROUP otherwise, GROUP_ID_NOT_FOUND for an unknown group. The
// group becomes Dead at once and tombstones for its offsets and its
// metadata are written; the response waits for them to be replicated and
// carries the write's error for the group if one failed (with its message
// from v3). Consumer (KIP-848) groups are deleted the same way, with their
// own tombstones. Share groups (KIP-932) are deleted with their
// share-partition states (DeleteShareGroupState on their share
// coordinators) before the answer.

import (
	"context"
	"time"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiSpec{key: 42, min: 0, max: 3, handle: (*Handlers).handleDeleteGroups})
}

func (h *Handlers) handleDeleteGroups(ctx context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DeleteGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	// Groups the principal may not DELETE are answered
	// GROUP_AUTHORIZATION_FAILED and left alone.
	var allowed []string
	shareErrs := map[string]error{}
	for _, id := range req.Groups {
		switch {
		case !rc.AuthorizedGroup(kmsg.ACLOperationDelete, id):
		case h.shares.Has(id):
			sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			shareErrs[id] = h.shares.DeleteGroup(sctx, id)
			cancel()
		default:
			allowed = append(allowed, id)
		}
	}
	h.groups.DeleteGroups(allowed, func(errs []error) {
		i := 0
		for _, id := range req.Groups {
			rg := kmsg.NewDeleteGroupsResponseGroup()
			rg.Group = id
			if err, ok := shareErrs[id]; ok {
				rg.ErrorCode = errcode.Of(err)
				if err != nil && req.Version >= 3 {
					rg.ErrorMessage = errcode.Message(err)
				}
			} else if rc.AuthorizedGroup(kmsg.ACLOperationDelete, id) {
				rg.ErrorCode = errcode.Of(errs[i])
				if errs[i] != nil && req.Version >= 3 {
					rg.ErrorMessage = groupErrorMessage(errs[i])
				}
				i++
			} else {
				rg.ErrorCode = kerr.GroupAuthorizationFailed.Code
			}
			resp.Groups = append(resp.Groups, rg)
		}
		rc.Respond(resp)
	})
	return nil, nil
}
