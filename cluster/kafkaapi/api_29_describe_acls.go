package kafkaapi

// DescribeAcls (key 29).
//
// Answers from this node's metadata image: every ACL the filter matches
// (metadata.ACLFilter: ANY, MATCH, LITERAL, PREFIXED), grouped by resource
// pattern in a stable order. Needs DESCRIBE on the CLUSTER
// (CLUSTER_AUTHORIZATION_FAILED); a filter with an UNKNOWN field is
// INVALID_REQUEST. Without an authorizer there are no ACLs to describe,
// as in Kafka: SECURITY_DISABLED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/metadata"
)

func init() {
	register(apiSpec{key: 29, min: 0, max: 3, handle: (*Handlers).handleDescribeACLs, actions: server.ClusterAction(kmsg.ACLOperationDescribe)})
}

func (h *Handlers) handleDescribeACLs(_ context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeACLsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	fail := func(err error) (kmsg.Response, error) {
		resp.ErrorCode, resp.ErrorMessage = errcode.Of(err), errcode.Message(err)
		return resp, nil
	}
	if !h.aclsEnabled() {
		return fail(errSecurityDisabled)
	}
	if !rc.AuthorizedCluster(kmsg.ACLOperationDescribe) {
		return fail(kerr.ClusterAuthorizationFailed)
	}
	f, err := aclFilter(req.ResourceType, req.ResourceName, req.ResourcePatternType, req.Principal, req.Host, req.Operation, req.PermissionType)
	if err != nil {
		return fail(err)
	}
	var last *kmsg.DescribeACLsResponseResource
	for _, acl := range h.image().ACLs.All() {
		if !f.Matches(acl) {
			continue
		}
		if last == nil || int8(last.ResourceType) != acl.ResourceType || last.ResourceName != acl.ResourceName ||
			int8(last.ResourcePatternType) != acl.PatternType {
			r := kmsg.NewDescribeACLsResponseResource()
			r.ResourceType = kmsg.ACLResourceType(acl.ResourceType)
			r.ResourceName = acl.ResourceName
			r.ResourcePatternType = kmsg.ACLResourcePatternType(acl.PatternType)
			resp.Resources = append(resp.Resources, r)
			last = &resp.Resources[len(resp.Resources)-1]
		}
		last.ACLs = append(last.ACLs, describedACL(acl))
	}
	return resp, nil
}

func describedACL(acl *metadata.ACL) kmsg.DescribeACLsResponseResourceACL {
	a := kmsg.NewDescribeACLsResponseResourceACL()
	a.Principal, a.Host = acl.Principal, acl.Host
	a.Operation = kmsg.ACLOperation(acl.Operation)
	a.PermissionType = kmsg.ACLPermissionType(acl.Permission)
	return a
}
