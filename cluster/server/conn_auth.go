package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/security"
	"github.com/kbroker/kbroker/security/sasl"
	"github.com/kbroker/kbroker/wire"
)

// tlsHandshakeTimeout bounds a TLS handshake: a client that connects and
// says nothing holds no goroutine for longer.
const tlsHandshakeTimeout = 10 * time.Second

// maxUnauthenticatedFrame bounds every frame a SASL connection sends
// before it is authenticated (requests and raw v0 tokens), as Kafka's
// sasl.server.max.receive.size does: a client that has not proven who it
// is cannot make the broker buffer socket.request.max.bytes.
const maxUnauthenticatedFrame = 512 << 10

var (
	errNotAuthenticated = errors.New("request before SASL authentication")
	errSessionExpired   = errors.New("SASL session expired (connections.max.reauth.ms) without re-authentication")
	errSASLFailed       = errors.New("SASL authentication failed")
	errNotSASLListener  = errors.New("SASL request on a listener without SASL")
)

// connAuth is one connection's authentication state. Only the
// connection's reader goroutine touches it (requests are handled in
// order), so it needs no lock.
type connAuth struct {
	l  *ListenerSecurity // nil: PLAINTEXT
	cs *security.ConnSecurity
	// reauth is a re-authentication in progress (KIP-368): a new SASL
	// exchange on an authenticated connection, whose principal must stay
	// the same.
	reauth    *security.SASLAuthenticator
	principal Principal
	// expiry is when the SASL session ends (connections.max.reauth.ms,
	// or the delegation token's expiry); zero when it does not.
	expiry time.Time
	// lifetime is expiry less the time of the authentication, the
	// SessionLifetimeMs the client is sent.
	lifetime time.Duration
	// token: the session authenticated with a delegation token.
	token bool
}

// startAuth secures a new connection: the TLS handshake on SSL and SASL_SSL
// listeners (the connection then reads and writes through TLS) and the
// connection's initial principal.
func (c *conn) startAuth(ctx context.Context) error {
	c.auth.principal = AnonymousPrincipal
	l := c.auth.l
	if l == nil {
		return nil
	}
	var state *tls.ConnectionState
	if cfg := l.Sec.ServerTLS(); cfg != nil {
		tc := tls.Server(c.nc, cfg)
		hctx, cancel := context.WithTimeout(ctx, tlsHandshakeTimeout)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			return fmt.Errorf("TLS handshake: %w", err)
		}
		st := tc.ConnectionState()
		state = &st
		c.nc = tc
	}
	cs, err := l.Sec.NewConn(state)
	if err != nil {
		return err
	}
	c.auth.cs = cs
	c.auth.principal = principalOf(cs.Principal())
	return nil
}

func principalOf(p security.Principal) Principal { return Principal{Type: p.Type, Name: p.Name} }

// advertises reports whether ApiVersions lists apiKey on the
// connection's listener: the SASL APIs only on SASL listeners.
func (a *connAuth) advertises(apiKey int16) bool {
	switch apiKey {
	case kmsg.SASLHandshake.Int16(), kmsg.SASLAuthenticate.Int16():
		return a.l.sasl()
	}
	return true
}

// admit decides whether a request with apiKey may be handled now: before
// SASL authentication, during a re-authentication and after the session
// expired, only ApiVersions and the SASL requests may (Kafka closes the
// connection for anything else).
func (a *connAuth) admit(apiKey int16) error {
	if a.cs == nil || a.cs.SASL == nil || security.AllowedBeforeAuth(apiKey) {
		return nil
	}
	switch {
	case !a.cs.Authenticated() || a.reauth != nil:
		return fmt.Errorf("%w: %s", errNotAuthenticated, kmsg.NameForKey(apiKey))
	case !a.expiry.IsZero() && time.Now().After(a.expiry):
		return errSessionExpired
	}
	return nil
}

// frameLimit is the largest request frame the connection may send now:
// max, or maxUnauthenticatedFrame while a SASL connection is not
// authenticated.
func (a *connAuth) frameLimit(max int32) int32 {
	if a.cs != nil && a.cs.SASL != nil && !a.cs.Authenticated() {
		return min(max, maxUnauthenticatedFrame)
	}
	return max
}

// expectRawToken reports whether the next frame is a raw SASL token
// (after SaslHandshake v0) rather than a request.
func (a *connAuth) expectRawToken() bool {
	return a.cs != nil && a.cs.SASL != nil && a.cs.SASL.ExpectRawToken()
}

// handshake answers SaslHandshake. A non-nil error closes the connection
// once the response is written.
func (c *conn) handshake(req *kmsg.SASLHandshakeRequest) (*kmsg.SASLHandshakeResponse, error) {
	a := &c.auth
	if !a.l.sasl() {
		// As Kafka answers a SASL request outside a SASL listener.
		resp := kmsg.NewPtrSASLHandshakeResponse()
		resp.Version = req.Version
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp, errNotSASLListener
	}
	if !a.cs.SASL.Authenticated() || a.l.Reauth <= 0 {
		// First authentication, or a second handshake where
		// re-authentication is off (the authenticator refuses it).
		resp, closeAfter := a.cs.SASL.Handshake(req)
		if closeAfter {
			return resp, fmt.Errorf("%w: SaslHandshake %s: %s", errSASLFailed, req.Mechanism, kerr.ErrorForCode(resp.ErrorCode))
		}
		return resp, nil
	}
	// Re-authentication (KIP-368): SaslHandshake v1+, same mechanism.
	if req.Version == 0 || a.reauth != nil || req.Mechanism != a.cs.SASL.Mechanism() {
		resp := kmsg.NewPtrSASLHandshakeResponse()
		resp.Version = req.Version
		resp.SupportedMechanisms = []string{a.cs.SASL.Mechanism()}
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp, fmt.Errorf("%w: re-authentication must use SaslHandshake v1+ with mechanism %s", errSASLFailed, a.cs.SASL.Mechanism())
	}
	re := security.NewSASLAuthenticator(a.l.Sec.SASL)
	resp, closeAfter := re.Handshake(req)
	if closeAfter {
		return resp, fmt.Errorf("%w: re-authentication handshake: %s", errSASLFailed, kerr.ErrorForCode(resp.ErrorCode))
	}
	a.reauth = re
	return resp, nil
}

// authenticate answers SaslAuthenticate. A non-nil error closes the
// connection once the response is written.
func (c *conn) authenticate(ctx context.Context, req *kmsg.SASLAuthenticateRequest) (*kmsg.SASLAuthenticateResponse, error) {
	a := &c.auth
	if !a.l.sasl() {
		resp := kmsg.NewPtrSASLAuthenticateResponse()
		resp.Version = req.Version
		resp.ErrorCode = kerr.IllegalSaslState.Code
		msg := "SaslAuthenticate on a listener without SASL"
		resp.ErrorMessage = &msg
		return resp, errNotSASLListener
	}
	auth := a.cs.SASL
	if a.reauth != nil {
		auth = a.reauth
	}
	resp, closeAfter := auth.Authenticate(ctx, req)
	if closeAfter {
		c.saslFailed(auth)
		return resp, fmt.Errorf("%w: %s", errSASLFailed, kerr.ErrorForCode(resp.ErrorCode))
	}
	if !auth.Authenticated() {
		return resp, nil // more rounds (SCRAM)
	}
	if err := c.authenticated(auth); err != nil {
		msg := err.Error()
		resp.ErrorCode, resp.ErrorMessage, resp.SASLAuthBytes = kerr.SaslAuthenticationFailed.Code, &msg, nil
		return resp, err
	}
	if !a.expiry.IsZero() && req.Version >= 1 {
		resp.SessionLifetimeMillis = max(a.lifetime.Milliseconds(), 1)
	}
	return resp, nil
}

// authenticated records a successful exchange: the connection's
// principal, and the session's end when connections.max.reauth.ms is set.
// A re-authentication may not change the principal.
func (c *conn) authenticated(auth *security.SASLAuthenticator) error {
	a := &c.auth
	p := principalOf(auth.Principal())
	if a.reauth != nil {
		a.reauth = nil
		if p != a.principal {
			c.srv.metrics.saslFailures.WithLabelValues(a.l.Name, auth.Mechanism()).Inc()
			c.logger.Warn("SASL re-authentication as another principal; closing", "principal", a.principal.String(), "new", p.String())
			return fmt.Errorf("%w: cannot change principals during re-authentication", sasl.ErrAuthenticationFailed)
		}
	}
	a.principal = p
	a.token = auth.TokenAuthenticated()
	now := time.Now()
	a.expiry = sessionExpiry(now, a.l.Reauth, auth.CredentialExpiry())
	a.lifetime = a.expiry.Sub(now)
	c.logger.Debug("SASL authenticated", "principal", p.String(), "mechanism", auth.Mechanism())
	return nil
}

// sessionExpiry is when a SASL session authenticated at now ends, as
// Kafka's SaslServerAuthenticator computes it: after reauth
// (connections.max.reauth.ms, 0 unbounded), and no later than the
// credential's expiry (a delegation token's; zero for none) even when
// reauth is 0. Zero: never.
func sessionExpiry(now time.Time, reauth time.Duration, credential time.Time) time.Time {
	var end time.Time
	if reauth > 0 {
		end = now.Add(reauth)
	}
	if !credential.IsZero() && (end.IsZero() || credential.Before(end)) {
		end = credential
	}
	return end
}

// tokenRequestsAllowed is Kafka's allowTokenRequests: delegation tokens
// may be created, renewed, expired and described only over a connection
// whose principal was authenticated (SASL, or SSL with a client
// certificate) by other means than a delegation token.
func (a *connAuth) tokenRequestsAllowed() bool {
	switch {
	case a.token || a.l == nil:
		return false
	case a.l.sasl():
		return a.cs != nil && a.cs.Authenticated()
	}
	return a.cs != nil && a.principal != AnonymousPrincipal
}

// saslFailed counts and logs a failed exchange. The log has the
// mechanism and the internal cause, never a password.
func (c *conn) saslFailed(auth *security.SASLAuthenticator) {
	mech := auth.Mechanism()
	c.srv.metrics.saslFailures.WithLabelValues(c.auth.l.Name, mech).Inc()
	args := []any{"mechanism", mech, "err", auth.Err()}
	if cause := sasl.Cause(auth.Err()); cause != nil {
		args = append(args, "cause", cause)
	}
	c.logger.Info("SASL authentication failed", args...)
}

// rawToken reads one raw SASL token (after SaslHandshake v0: a size
// prefix and the token, no request header) and queues the raw reply in
// request order. A failure closes the connection without a reply, as v0
// has no way to carry an error.
func (c *conn) rawToken(ctx context.Context, r interface{ Read([]byte) (int, error) }) error {
	if err := c.frameDeadline(ctx); err != nil {
		return err
	}
	token, err := wire.ReadFrame(r, maxUnauthenticatedFrame)
	if err != nil {
		return c.frameErr(err)
	}
	auth := c.auth.cs.SASL
	reply, err := auth.AuthenticateRaw(ctx, token)
	if err != nil {
		c.saslFailed(auth)
		return protocolError{fmt.Errorf("%w: %w", errSASLFailed, err)}
	}
	if auth.Authenticated() {
		if err := c.authenticated(auth); err != nil {
			return protocolError{err}
		}
	}
	s := &slot{done: make(chan struct{}), raw: true, rawReply: reply}
	c.mu.Lock()
	c.pending[s] = struct{}{}
	c.mu.Unlock()
	s.finish(nil, false, nil)
	select {
	case c.slots <- s:
	case <-ctx.Done():
		c.retire(s)
		return ctx.Err()
	}
	return nil
}

// apiVersionsResponse is ApiVersions as this connection's listener serves
// it: the SASL APIs are listed only on SASL listeners.
func (c *conn) apiVersionsResponse(version int16) *kmsg.ApiVersionsResponse {
	resp := c.srv.APIVersions(version)
	keys := resp.ApiKeys[:0]
	for _, k := range resp.ApiKeys {
		if c.auth.advertises(k.ApiKey) {
			keys = append(keys, k)
		}
	}
	resp.ApiKeys = keys
	return resp
}
