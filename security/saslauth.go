package security

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/security/sasl"
)

// SASLAuthenticator runs the SASL exchange of one SASL_PLAINTEXT or
// SASL_SSL connection, as Kafka's SaslServerAuthenticator does:
//
//  1. Until authenticated only ApiVersions, SaslHandshake and
//     SaslAuthenticate may be sent (AllowedBeforeAuth); anything else
//     closes the connection.
//  2. SaslHandshake picks the mechanism (Handshake).
//  3. With SaslHandshake v1+, the tokens travel in SaslAuthenticate
//     requests (Authenticate). After a v0 handshake they travel as raw
//     size-prefixed frames without a request header (ExpectRawToken,
//     AuthenticateRaw), the pre-KIP-152 protocol.
//  4. On success Principal is User:<name>; on failure the response carries
//     SASL_AUTHENTICATION_FAILED and the connection is closed after it is
//     sent.
//
// It is not safe for concurrent use; a connection reads requests in order.
type SASLAuthenticator struct {
	server    *sasl.Server
	session   sasl.ServerSession
	state     saslState
	raw       bool
	principal Principal
	err       error
}

type saslState int

const (
	saslAwaitHandshake saslState = iota
	saslAuthenticating
	saslComplete
	saslFailed
)

// NewSASLAuthenticator starts the exchange for a new connection.
func NewSASLAuthenticator(server *sasl.Server) *SASLAuthenticator {
	return &SASLAuthenticator{server: server}
}

// Authenticated reports whether the exchange has succeeded.
func (a *SASLAuthenticator) Authenticated() bool { return a.state == saslComplete }

// Principal is the authenticated principal, valid once Authenticated.
func (a *SASLAuthenticator) Principal() Principal { return a.principal }

// TokenAuthenticated reports whether the exchange succeeded with a
// delegation token (SCRAM with tokenauth=true): the principal is then the
// token's owner, and Kafka refuses delegation token requests from it.
func (a *SASLAuthenticator) TokenAuthenticated() bool {
	ts, ok := a.session.(sasl.TokenSession)
	return a.state == saslComplete && ok && ts.TokenAuthenticated()
}

// CredentialExpiry is when the token of a token-authenticated session
// expires; zero otherwise.
func (a *SASLAuthenticator) CredentialExpiry() time.Time {
	if !a.TokenAuthenticated() {
		return time.Time{}
	}
	return a.session.(sasl.TokenSession).CredentialExpiry()
}

// Mechanism is the chosen mechanism, "" before the handshake.
func (a *SASLAuthenticator) Mechanism() string {
	if a.session == nil {
		return ""
	}
	return a.session.Mechanism()
}

// AllowedBeforeAuth reports whether a request with this API key may be
// handled while the connection is not yet authenticated.
func AllowedBeforeAuth(apiKey int16) bool {
	switch apiKey {
	case kmsg.ApiVersions.Int16(), kmsg.SASLHandshake.Int16(), kmsg.SASLAuthenticate.Int16():
		return true
	}
	return false
}

// ExpectRawToken reports whether the next frame from the client is a raw
// SASL token (after a SaslHandshake v0) rather than a Kafka request.
func (a *SASLAuthenticator) ExpectRawToken() bool {
	return a.state == saslAuthenticating && a.raw
}

// Handshake answers a SaslHandshake request. closeAfter tells the caller
// to close the connection once the response is written.
func (a *SASLAuthenticator) Handshake(req *kmsg.SASLHandshakeRequest) (resp *kmsg.SASLHandshakeResponse, closeAfter bool) {
	resp = kmsg.NewPtrSASLHandshakeResponse()
	resp.Version = req.Version
	resp.SupportedMechanisms = append([]string(nil), a.server.Enabled...)
	if a.state != saslAwaitHandshake {
		// A second handshake would be re-authentication (KIP-368), which
		// needs connections.max.reauth.ms; not supported.
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp, true
	}
	session, err := a.server.Start(req.Mechanism)
	if err != nil {
		a.state = saslFailed
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		return resp, true
	}
	a.session = session
	a.state = saslAuthenticating
	a.raw = req.Version == 0
	return resp, false
}

// Authenticate answers a SaslAuthenticate request.
func (a *SASLAuthenticator) Authenticate(ctx context.Context, req *kmsg.SASLAuthenticateRequest) (resp *kmsg.SASLAuthenticateResponse, closeAfter bool) {
	resp = kmsg.NewPtrSASLAuthenticateResponse()
	resp.Version = req.Version
	if a.state != saslAuthenticating || a.raw {
		msg := fmt.Sprintf("Unexpected SaslAuthenticate request in SASL state %s", a.state)
		resp.ErrorCode = kerr.IllegalSaslState.Code
		resp.ErrorMessage = &msg
		a.state = saslFailed
		return resp, true
	}
	reply, err := a.step(ctx, req.SASLAuthBytes)
	if err != nil {
		msg := err.Error()
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		resp.ErrorMessage = &msg
		return resp, true
	}
	resp.SASLAuthBytes = reply
	// SessionLifetimeMillis stays 0: no connections.max.reauth.ms.
	return resp, false
}

// AuthenticateRaw handles one raw token after a SaslHandshake v0 and
// returns the raw reply to write back (size-prefixed, no header; Kafka
// writes it even when empty). An error means the connection must be
// closed without a reply, as v0 has no way to carry one.
func (a *SASLAuthenticator) AuthenticateRaw(ctx context.Context, token []byte) ([]byte, error) {
	if !a.ExpectRawToken() {
		return nil, fmt.Errorf("raw SASL token in SASL state %s: %w", a.state, kerr.IllegalSaslState)
	}
	return a.step(ctx, token)
}

// Err is the error that failed the exchange, for the broker's log:
// sasl.Cause(Err()) holds internal detail the client was not sent.
func (a *SASLAuthenticator) Err() error { return a.err }

func (a *SASLAuthenticator) step(ctx context.Context, token []byte) ([]byte, error) {
	reply, err := a.session.Step(ctx, token)
	if err != nil {
		a.state = saslFailed
		a.err = err
		if !errors.Is(err, sasl.ErrAuthenticationFailed) {
			// Not one of ours: its text is not known to be safe to send.
			err = fmt.Errorf("%w with SASL mechanism %s", sasl.ErrAuthenticationFailed, a.session.Mechanism())
		}
		return nil, err
	}
	if a.session.Done() {
		a.state = saslComplete
		a.principal = User(a.session.Username())
	}
	return reply, nil
}

func (s saslState) String() string {
	switch s {
	case saslAwaitHandshake:
		return "HANDSHAKE_REQUEST"
	case saslAuthenticating:
		return "AUTHENTICATE"
	case saslComplete:
		return "COMPLETE"
	case saslFailed:
		return "FAILED"
	}
	return "UNKNOWN"
}
