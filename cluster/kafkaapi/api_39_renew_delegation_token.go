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
	resp.ExpiryTimestamp, resp.ErrorCode = h.changeTokenExpiry(ctx, rc, req.HMAC, req.RenewTimeMillis, h.store.RenewDelegationToken)
	return resp, nil
}

// changeTokenExpiry runs a renewal or an expiry (change) of the token
// whose HMAC a request carries, after CreateDelegationToken's connection
// and config checks, and returns the new expiry timestamp or
// tokenErrorTimestamp with the error code.
func (h *Handlers) changeTokenExpiry(ctx context.Context, rc *server.RequestContext, hmac []byte, periodMs int64,
	change func(context.Context, metadata.RenewTokenRequest) (int64, error),
) (expiry int64, code int16) {
	img := h.image()
	if err := h.tokenPrecheck(rc, img); err != nil {
		return tokenErrorTimestamp, tokenErrorCode(err)
	}
	t, ok := h.tokenByHMAC(img, hmac)
	if !ok {
		return tokenErrorTimestamp, tokenErrorCode(metadata.ErrDelegationTokenNotFound)
	}
	expiry, err := change(ctx, metadata.RenewTokenRequest{
		TokenID: t.TokenID, Principal: tokenPrincipal(rc), ExpiryPeriodMs: periodMs,
	})
	if err != nil {
		return tokenErrorTimestamp, tokenErrorCode(err)
	}
	return expiry, 0
}
