package kafkaapi

// DeleteAcls (key 31).
//
// Each filter (ANY, MATCH, LITERAL, PREFIXED; no UNKNOWN field, else
// INVALID_REQUEST) is matched by the active controller against its image
// and every ACL it matches is removed with a RemoveAccessControlEntry
// record; the response lists them per filter. Needs ALTER on the CLUSTER
// (CLUSTER_AUTHORIZATION_FAILED for every filter).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/metadata"
)

func init() {
	register(apiSpec{key: 31, min: 0, max: 3, handle: (*Handlers).handleDeleteACLs, actions: server.ClusterAction(kmsg.ACLOperationAlter)})
}

func (h *Handlers) handleDeleteACLs(ctx context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DeleteACLsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	results := make([]metadata.DeleteACLsResult, len(req.Filters))
	var filters []metadata.ACLFilter
	var at []int
	for i := range req.Filters {
		f := &req.Filters[i]
		switch {
		case !h.aclsEnabled():
			results[i].Err = errSecurityDisabled
		case !rc.AuthorizedCluster(kmsg.ACLOperationAlter):
			results[i].Err = kerr.ClusterAuthorizationFailed
		default:
			mf, err := aclFilter(f.ResourceType, f.ResourceName, f.ResourcePatternType, f.Principal, f.Host, f.Operation, f.PermissionType)
			if err != nil {
				results[i].Err = err
				continue
			}
			filters = append(filters, mf)
			at = append(at, i)
		}
	}
	if len(filters) > 0 {
		for j, r := range h.store.DeleteACLs(ctx, filters) {
			results[at[j]] = r
		}
	}
	for _, res := range results {
		r := kmsg.NewDeleteACLsResponseResult()
		r.ErrorCode, r.ErrorMessage = errcode.Of(res.Err), errcode.Message(res.Err)
		for _, acl := range res.Deleted {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType = kmsg.ACLResourceType(acl.ResourceType)
			m.ResourceName = acl.ResourceName
			m.ResourcePatternType = kmsg.ACLResourcePatternType(acl.PatternType)
			m.Principal, m.Host = acl.Principal, acl.Host
			m.Operation = kmsg.ACLOperation(acl.Operation)
			m.PermissionType = kmsg.ACLPermissionType(acl.Permission)
			r.MatchingACLs = append(r.MatchingACLs, m)
		}
		resp.Results = append(resp.Results, r)
	}
	return resp, nil
}
