package kafkaapi

// DescribeUserScramCredentials (key 50).
//
// Answers from this node's metadata image, per user, the mechanisms and
// iteration counts of its SCRAM credentials (never salts or keys). No
// users (null or empty) describes every user with a credential; a named
// user without one is RESOURCE_NOT_FOUND, a user named twice
// DUPLICATE_RESOURCE. Needs DESCRIBE on the CLUSTER
// (CLUSTER_AUTHORIZATION_FAILED, for the request and every user).

import (
	"context"
	"fmt"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiSpec{key: 50, min: 0, max: 0, handle: (*Handlers).handleDescribeUserSCRAMCredentials, actions: server.ClusterAction(kmsg.ACLOperationDescribe)})
}

func (h *Handlers) handleDescribeUserSCRAMCredentials(_ context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	img := h.image()
	infos := map[string][]kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo{}
	var all []string
	for _, c := range img.ScramCredentials() {
		if _, ok := infos[c.User]; !ok {
			all = append(all, c.User)
		}
		ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
		ci.Mechanism, ci.Iterations = c.Mechanism, c.Iterations
		infos[c.User] = append(infos[c.User], ci)
	}
	authorized := rc.AuthorizedCluster(kmsg.ACLOperationDescribe)
	if !authorized {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		resp.ErrorMessage = errcode.Message(kerr.ClusterAuthorizationFailed)
	}
	result := func(user string, err error) {
		r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		r.User = user
		if !authorized {
			err = kerr.ClusterAuthorizationFailed
		}
		r.ErrorCode, r.ErrorMessage = errcode.Of(err), errcode.Message(err)
		if err == nil {
			r.CredentialInfos = infos[user]
		}
		resp.Results = append(resp.Results, r)
	}
	if len(req.Users) == 0 {
		if authorized {
			for _, u := range all {
				result(u, nil)
			}
		}
		return resp, nil
	}
	count := map[string]int{}
	for _, u := range req.Users {
		count[u.Name]++
	}
	reported := map[string]bool{}
	for _, u := range req.Users {
		switch {
		case reported[u.Name]:
		case count[u.Name] > 1:
			result(u.Name, fmt.Errorf("%w: cannot describe SCRAM credentials for the same user twice in a single request", kerr.DuplicateResource))
		case infos[u.Name] == nil:
			result(u.Name, fmt.Errorf("%w: attempt to describe a user credential that does not exist", kerr.ResourceNotFound))
		default:
			result(u.Name, nil)
		}
		reported[u.Name] = true
	}
	return resp, nil
}
