package kafkaapi

// SaslHandshake (key 17).
//
// Picks the SASL mechanism of a connection on a SASL_PLAINTEXT or
// SASL_SSL listener (see conn_auth.go). After v0 the tokens follow as raw
// frames; after v1 in SaslAuthenticate requests. On an authenticated
// connection with connections.max.reauth.ms set, a new handshake starts a
// re-authentication (KIP-368). An unsupported mechanism or a handshake in
// the wrong state is answered and the connection closed. Other listeners
// do not list it in ApiVersions and answer it with ILLEGAL_SASL_STATE,
// then close, as Kafka does.

import (
	"context"

	"github.com/kbroker/kbroker/cluster/server"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiSpec{key: 17, min: 0, max: 1, handle: (*Handlers).handleSaslHandshake})
}

func (h *Handlers) handleSaslHandshake(_ context.Context, rc *server.RequestContext, req kmsg.Request) (kmsg.Response, error) {
	resp, err := rc.SASLHandshake(req.(*kmsg.SASLHandshakeRequest))
	if err != nil && resp != nil {
		rc.Respond(resp) // written before the connection closes
	}
	if err != nil {
		return nil, err
	}
	return resp, nil
}
