package kafkaapi

// ExpireDelegationToken (key 40).
//
// Moves the expiry of the token whose HMAC the request carries to now
// plus ExpiryPeriodMillis (never past its maximum timestamp), or removes
// the token at once when the period is negative; the response carries
// the new expiry timestamp. Errors as RenewDelegationToken's, but a
// negative period removes even an expired token, as in Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/server"
)

func init() {
	register(apiSpec{key: 40, min: 1, max: 2, handle: (*Handlers).handleExpireDelegationToken})
}

func (h *Handlers) handleExpireDelegationToken(ctx context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ExpireDelegationTokenRequest)
	resp := req.ResponseKind().(*kmsg.ExpireDelegationTokenResponse)
	resp.ExpiryTimestamp, resp.ErrorCode = h.changeTokenExpiry(ctx, rc, req.HMAC, req.ExpiryPeriodMillis, h.store.ExpireDelegationToken)
	return resp, nil
}
