package kafkaapi

// CreateAcls (key 30).
//
// Each creation is checked as Kafka checks it (a concrete resource type,
// LITERAL or PREFIXED, a concrete operation, ALLOW or DENY, a non-empty
// name, "kafka-cluster" for the CLUSTER, a Type:name principal;
// INVALID_REQUEST otherwise) and the valid ones are written as
// AccessControlEntry records through the active controller. Creating an
// ACL that exists succeeds without a second copy. Needs ALTER on the
// CLUSTER (CLUSTER_AUTHORIZATION_FAILED for every creation).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/metadata"
)

func init() {
	register(apiSpec{key: 30, min: 0, max: 3, handle: (*Handlers).handleCreateACLs, actions: server.ClusterAction(kmsg.ACLOperationAlter)})
}

func (h *Handlers) handleCreateACLs(ctx context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.CreateACLsRequest)
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	errs := make([]error, len(req.Creations))
	var acls []metadata.ACL
	var at []int // index in req.Creations of each of acls
	for i := range req.Creations {
		switch {
		case !h.aclsEnabled():
			errs[i] = errSecurityDisabled
		case !rc.AuthorizedCluster(kmsg.ACLOperationAlter):
			errs[i] = kerr.ClusterAuthorizationFailed
		default:
			acl, err := newACL(&req.Creations[i])
			if err != nil {
				errs[i] = err
				continue
			}
			acls = append(acls, acl)
			at = append(at, i)
		}
	}
	if len(acls) > 0 {
		for j, err := range h.store.CreateACLs(ctx, acls) {
			errs[at[j]] = err
		}
	}
	for _, err := range errs {
		r := kmsg.NewCreateACLsResponseResult()
		r.ErrorCode, r.ErrorMessage = errcode.Of(err), errcode.Message(err)
		resp.Results = append(resp.Results, r)
	}
	return resp, nil
}
