package metadata

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"
)

// The controller listener is authenticated when Config.ServerTLS is set:
// every accepted connection does a TLS handshake first, with a client
// certificate required and verified, and Config.AuthorizePeer maps the
// verified peer to the node id it may act as, or refuses it. Only then is
// the preamble read, inside TLS, so raft ('R') and the controller RPC ('C')
// both run over mutually authenticated TLS. Nodes dial each other with
// Config.ClientTLS (dialer). A plain socket, a client without a
// certificate or with one from another CA fails the handshake; a
// certificate AuthorizePeer refuses is closed right after it.

// dialer opens connections to controller listeners: TCP, then a TLS
// handshake when tls is set.
type dialer struct {
	tls  *tls.Config
	sasl *ControllerSASL // nil: no SASL exchange
}

// dialTimeout bounds one connect and handshake to a controller
// listener. A node that was killed or cut off leaves its address
// unanswered (no RST) and a dial would otherwise spend the caller's whole
// deadline on it, while a new leader may be elected in half a second.
const dialTimeout = time.Second

// dial connects to addr; ctx and dialTimeout bound the connect and the
// handshake.
func (d dialer) dial(ctx context.Context, addr string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	c, err := d.dialTLS(ctx, addr)
	if err != nil || d.sasl == nil {
		return c, err
	}
	if err := d.sasl.saslDial(ctx, c, addr); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// dialTLS connects to addr, with a TLS handshake when d.tls is set.
func (d dialer) dialTLS(ctx context.Context, addr string) (net.Conn, error) {
	var nd net.Dialer
	c, err := nd.DialContext(ctx, "tcp", addr)
	if err != nil || d.tls == nil {
		return c, err
	}
	cfg := d.tls
	if cfg.ServerName == "" {
		// Verify the node's certificate against the host it is dialed
		// at (a voter address, the leader's raft address).
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("metadata: dial %s: %w", addr, err)
		}
		cfg = cfg.Clone()
		cfg.ServerName = host
	}
	tc := tls.Client(c, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("metadata: TLS handshake with %s: %w", addr, err)
	}
	return tc, nil
}

// serverTLS is cfg with client certificates required and verified,
// whatever cfg (or its GetConfigForClient) says: an anonymous peer must
// never reach raft or the controller RPC. With SASL (SASL_SSL) the peer
// authenticates with SASL inside TLS instead, and cfg is used as given.
func serverTLS(cfg *tls.Config, withSASL bool) *tls.Config {
	if cfg == nil || withSASL {
		return cfg
	}
	cfg = cfg.Clone()
	cfg.ClientAuth = tls.RequireAndVerifyClientCert
	if get := cfg.GetConfigForClient; get != nil {
		cfg.GetConfigForClient = func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			c, err := get(h)
			if c != nil {
				c = c.Clone()
				c.ClientAuth = tls.RequireAndVerifyClientCert
			}
			return c, err
		}
	}
	return cfg
}

// authenticate does the server side of the TLS handshake and the SASL
// exchange on an accepted connection, as the listener's protocol asks,
// and says who the peer is: with SSL AuthorizePeer maps its certificate,
// with SASL ControllerSASL.AuthorizeUser its user. With a PLAINTEXT
// listener it returns c and an unverified identity.
func (s *Store) authenticate(c net.Conn) (net.Conn, peerIdentity, error) {
	if s.serverTLS == nil && s.cfg.SASL == nil {
		return c, peerIdentity{}, nil
	}
	ctx, cancel := context.WithTimeout(s.ctx, preambleTimeout)
	defer cancel()
	conn := c
	if s.serverTLS != nil {
		tc := tls.Server(c, s.serverTLS)
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, peerIdentity{}, fmt.Errorf("TLS handshake: %w", err)
		}
		if s.cfg.SASL == nil {
			return s.authorizeCert(tc)
		}
		conn = tc
	}
	// The whole exchange shares the preamble's time bound, and Close
	// (s.ctx) interrupts it.
	conn.SetDeadline(time.Now().Add(preambleTimeout))
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	peer, err := s.cfg.SASL.saslAccept(ctx, conn)
	if err != nil {
		if errors.Is(err, errSASLRefused) {
			return nil, peerIdentity{}, fmt.Errorf("%w: %w", errPeerRefused, err)
		}
		return nil, peerIdentity{}, fmt.Errorf("SASL: %w", err)
	}
	conn.SetDeadline(time.Time{})
	return conn, peer, nil
}

// authorizeCert asks AuthorizePeer which node the certificate of a mutual
// TLS peer is.
func (s *Store) authorizeCert(tc *tls.Conn) (net.Conn, peerIdentity, error) {
	st := tc.ConnectionState()
	id, ok := s.cfg.AuthorizePeer(st)
	if !ok || id < 0 {
		subject := "?"
		if len(st.PeerCertificates) > 0 {
			subject = st.PeerCertificates[0].Subject.String()
		}
		return nil, peerIdentity{}, fmt.Errorf("%w: %s", errPeerRefused, subject)
	}
	return tc, peerIdentity{verified: true, node: id}, nil
}

var errPeerRefused = errors.New("controller listener refused the peer")

// warnPlaintext logs, once per Open, that the controller listener takes
// anybody.
func (s *Store) warnPlaintext() {
	if s.serverTLS == nil && s.cfg.SASL == nil {
		s.log.Warn("the controller listener is unauthenticated (PLAINTEXT): any host that reaches it can join raft and send controller requests; set TLS for it",
			"addr", s.advertise)
	}
}
