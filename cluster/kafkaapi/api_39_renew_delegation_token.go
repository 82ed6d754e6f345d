package kafkaapi

// RenewDelegationToken (key 39).
//
// Moves the expiry of the token whose HMAC the request carries to now
// plus RenewTimeMillis (<= 0 or more than delegation.token.expiry.time.ms:
// that config), never past the token's maximum timestamp. Only the owner
// or a renewer may (DELEGATION_TOKEN_OWNER_MISMATCH); an unknown HMAC is
// DELEGATION_TOKEN_NOT_FOUND, an expired token DELEGATION_TOKEN_EXPIRED.
// The connection and config checks are CreateDelegationToken's.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/metadata"
)

func init() {
	register(apiSpec{key: 39, min: 1, max: 2, handle: (*Handlers).handleRenewDelegationToken})
}

func (h *Handlers) handleRenewDelegationToken(ctx context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.RenewDelegationTokenRequest)
	resp := req.ResponseKind().(*kmsg.RenewDelegationTokenResponse)
	resp.ExpiryTimestamp = tokenErrorTimestamp
	img := h.image()
	if err := h.tokenPrecheck(rc, img); err != nil {
		resp.ErrorCode = tokenErrorCode(err)
		return resp, nil
	}
	t, ok := h.tokenByHMAC(img, req.HMAC)
	if !ok {
		resp.ErrorCode = tokenErrorCode(metadata.ErrDelegationTokenNotFound)
		return resp, nil
	}
	expiry, err := h.store.RenewDelegationToken(ctx, metadata.RenewTokenRequest{
		TokenID: t.TokenID, Principal: tokenPrincipal(rc), ExpiryPeriodMs: req.RenewTimeMillis,
	})
	if err != nil {
		resp.ErrorCode = tokenErrorCode(err)
		return resp, nil
	}
	resp.ExpiryTimestamp = expiry
	return resp, nil
}
