package kafkaapi

// DescribeDelegationToken (key 41).
//
// Lists the tokens owned or renewable by the requested owners (null: all
// tokens, empty: none), with their HMACs, as Kafka's
// DelegationTokenManager.filterToken selects them: a token is shown to
// its owner and renewers, to a principal with DESCRIBE on the
// DELEGATION_TOKEN resource of its id, and to one with DESCRIBE_TOKENS on
// the USER resource of its owner; others are left out silently. The
// connection and config checks are CreateDelegationToken's but for the
// metadata.version, as Kafka's (below 4 there are no tokens to list).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/metadata"
)

func init() {
	register(apiSpec{key: 41, min: 1, max: 3, handle: (*Handlers).handleDescribeDelegationToken})
}

func (h *Handlers) handleDescribeDelegationToken(_ context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeDelegationTokenRequest)
	resp := req.ResponseKind().(*kmsg.DescribeDelegationTokenResponse)
	switch {
	case !rc.TokenRequestsAllowed:
		resp.ErrorCode = kerr.DelegationTokenRequestNotAllowed.Code
		return resp, nil
	case !h.tokensEnabled():
		resp.ErrorCode = kerr.DelegationTokenAuthDisabled.Code
		return resp, nil
	case req.Owners != nil && len(req.Owners) == 0:
		return resp, nil
	}
	var owners []metadata.TokenPrincipal
	for _, o := range req.Owners {
		owners = append(owners, metadata.TokenPrincipal{Type: o.PrincipalType, Name: o.PrincipalName})
	}
	requester := tokenPrincipal(rc)
	for _, t := range h.image().DelegationTokens() {
		if !tokenRequested(t, req.Owners == nil, owners) || !h.mayDescribeToken(rc, requester, t) {
			continue
		}
		d := kmsg.NewDescribeDelegationTokenResponseTokenDetail()
		d.PrincipalType, d.PrincipalName = t.Owner.Type, t.Owner.Name
		d.TokenRequesterPrincipalType, d.TokenRequesterPrincipalName = t.Requester.Type, t.Requester.Name
		d.IssueTimestamp, d.ExpiryTimestamp, d.MaxTimestamp = t.IssueMs, t.ExpiryMs, t.MaxMs
		d.TokenID = t.TokenID
		d.HMAC = h.tokenHMAC(t.TokenID)
		for _, r := range t.Renewers {
			rr := kmsg.NewDescribeDelegationTokenResponseTokenDetailRenewer()
			rr.PrincipalType, rr.PrincipalName = r.Type, r.Name
			d.Renewers = append(d.Renewers, rr)
		}
		resp.TokenDetails = append(resp.TokenDetails, d)
	}
	return resp, nil
}

// tokenRequested: all tokens were asked for, or one of owners owns or
// may renew t.
func tokenRequested(t *metadata.DelegationToken, all bool, owners []metadata.TokenPrincipal) bool {
	if all {
		return true
	}
	for _, o := range owners {
		if t.OwnerOrRenewer(o) {
			return true
		}
	}
	return false
}

// mayDescribeToken is Kafka's filterToken permission: owner or renewer,
// DESCRIBE on the token, or DESCRIBE_TOKENS on its owner.
func (h *Handlers) mayDescribeToken(rc *server.RequestContext, requester metadata.TokenPrincipal, t *metadata.DelegationToken) bool {
	return t.OwnerOrRenewer(requester) ||
		rc.Authorized(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeDelegationToken, t.TokenID) ||
		rc.Authorized(kmsg.ACLOperationDescribeTokens, kmsg.ACLResourceTypeUser, t.Owner.String())
}
