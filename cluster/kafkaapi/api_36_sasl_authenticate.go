package kafkaapi

// SaslAuthenticate (key 36).
//
// Carries the SASL tokens after a SaslHandshake v1 (see conn_auth.go). A
// failed authentication is answered with SASL_AUTHENTICATION_FAILED and
// the connection closed after the response; it is counted in
// kbroker_sasl_authentication_failures_total. v1+ responses carry
// SessionLifetimeMs when connections.max.reauth.ms is set (KIP-368).
// Other listeners do not list it and answer ILLEGAL_SASL_STATE, then
// close.

import (
	"context"

	"github.com/kbroker/kbroker/cluster/server"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiSpec{key: 36, min: 0, max: 2, handle: (*Handlers).handleSaslAuthenticate})
}

func (h *Handlers) handleSaslAuthenticate(ctx context.Context, rc *server.RequestContext, req kmsg.Request) (kmsg.Response, error) {
	resp, err := rc.SASLAuthenticate(ctx, req.(*kmsg.SASLAuthenticateRequest))
	if err != nil && resp != nil {
		rc.Respond(resp) // written before the connection closes
	}
	if err != nil {
		return nil, err
	}
	return resp, nil
}
