package kafkaapi

// CreateDelegationToken (key 38).
//
// Creates a delegation token (KIP-48) through the active controller and
// answers its id and HMAC, as Kafka does:
//
//	PLAINTEXT, SSL without a client certificate, or a connection
//	authenticated with a token                DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
//	an owner other than the requester, without
//	CREATE_TOKENS on that USER                DELEGATION_TOKEN_AUTHORIZATION_FAILED
//	a renewer that is not a User              INVALID_PRINCIPAL_TYPE
//	no delegation.token.secret.key            DELEGATION_TOKEN_AUTH_DISABLED
//	metadata.version below 4                  UNSUPPORTED_VERSION
//
// The token lives MaxLifetimeMillis (<= 0: delegation.token.max.lifetime.ms,
// and never longer) and expires after delegation.token.expiry.time.ms
// unless renewed. The HMAC is HMAC-SHA512 of the token id under
// delegation.token.secret.key.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/metadata"
)

func init() {
	register(apiSpec{key: 38, min: 1, max: 3, handle: (*Handlers).handleCreateDelegationToken})
}

func (h *Handlers) handleCreateDelegationToken(ctx context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.CreateDelegationTokenRequest)
	resp := req.ResponseKind().(*kmsg.CreateDelegationTokenResponse)

	requester := tokenPrincipal(rc)
	owner := requester
	if req.OwnerPrincipalName != nil && *req.OwnerPrincipalName != "" {
		owner = metadata.TokenPrincipal{Type: "User", Name: *req.OwnerPrincipalName}
		if req.OwnerPrincipalType != nil && *req.OwnerPrincipalType != "" {
			owner.Type = *req.OwnerPrincipalType
		}
	}
	resp.PrincipalType, resp.PrincipalName = owner.Type, owner.Name
	resp.TokenRequesterPrincipalType, resp.TokenRequesterPrincipalName = requester.Type, requester.Name

	renewers := make([]metadata.TokenPrincipal, 0, len(req.Renewers))
	invalidRenewer := false
	for _, r := range req.Renewers {
		renewers = append(renewers, metadata.TokenPrincipal{Type: r.PrincipalType, Name: r.PrincipalName})
		invalidRenewer = invalidRenewer || r.PrincipalType != "User"
	}
	switch {
	case !rc.TokenRequestsAllowed:
		resp.ErrorCode = kerr.DelegationTokenRequestNotAllowed.Code
		return resp, nil
	case owner != requester && !rc.Authorized(kmsg.ACLOperationCreateTokens, kmsg.ACLResourceTypeUser, owner.String()):
		resp.ErrorCode = kerr.DelegationTokenAuthorizationFailed.Code
		return resp, nil
	case invalidRenewer:
		resp.ErrorCode = kerr.InvalidPrincipalType.Code
		return resp, nil
	}
	if err := h.tokenPrecheck(rc, h.image()); err != nil {
		resp.ErrorCode = tokenErrorCode(err)
		return resp, nil
	}
	t, err := h.store.CreateDelegationToken(ctx, metadata.CreateTokenRequest{
		Owner: owner, Requester: requester, Renewers: renewers, MaxLifetimeMs: req.MaxLifetimeMillis,
	})
	if err != nil {
		resp.ErrorCode = tokenErrorCode(err)
		return resp, nil
	}
	resp.TokenID = t.TokenID
	resp.HMAC = h.tokenHMAC(t.TokenID)
	resp.IssueTimestamp, resp.ExpiryTimestamp, resp.MaxTimestamp = t.IssueMs, t.ExpiryMs, t.MaxMs
	h.logger.Info("created delegation token", "tokenId", t.TokenID, "owner", owner.String(), "requester", requester.String())
	return resp, nil
}
