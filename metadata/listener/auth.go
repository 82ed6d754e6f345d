package listener

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"
)

// The controller listener is authenticated when it has TLS: every
// accepted connection does a TLS handshake first, with a client
// certificate required and verified, and AuthorizePeer maps the verified
// peer to the node id it may act as, or refuses it. With SASL the peer
// authenticates with a SASL exchange instead (sasl.go), inside TLS with
// SASL_SSL. Only then is the preamble read, so raft ('R') and the
// controller RPC ('C') only ever see authenticated peers. A plain socket,
// a client without a certificate or with one from another CA fails the
// handshake; a peer AuthorizePeer or SASL.AuthorizeUser refuses is closed
// right after it.

// Peer is who a connection authenticated as: on an authenticated listener
// bound to one node (Verified, Node), or a principal every node shares; on
// a PLAINTEXT listener nobody in particular (Verified false).
type Peer struct {
	Verified bool
	Node     int32
}

// ErrPeerRefused: the peer authenticated but AuthorizePeer or
// SASL.AuthorizeUser refused it.
var ErrPeerRefused = errors.New("controller listener refused the peer")

// Authenticator authenticates the connections accepted on a controller
// listener. The zero value is a PLAINTEXT listener.
type Authenticator struct {
	// TLS, from ServerTLS; nil: no TLS.
	TLS *tls.Config
	// SASL, nil: no SASL exchange.
	SASL *SASL
	// AuthorizePeer maps the verified TLS state of a peer to its node id
	// (ok false or a negative id refuses it); used with TLS and no SASL.
	AuthorizePeer func(tls.ConnectionState) (nodeID int32, ok bool)
}

// ServerTLS is cfg with client certificates required and verified,
// whatever cfg (or its GetConfigForClient) says: an anonymous peer must
// never reach raft or the controller RPC. With SASL (SASL_SSL) the peer
// authenticates with SASL inside TLS instead, and cfg is used as given.
func ServerTLS(cfg *tls.Config, withSASL bool) *tls.Config {
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

// Authenticate does the server side of the TLS handshake and the SASL
// exchange on an accepted connection, as the listener's protocol asks,
// bounded by PreambleTimeout and ctx, and says who the peer is: with SSL
// AuthorizePeer maps its certificate, with SASL SASL.AuthorizeUser its
// user. With a PLAINTEXT listener it returns c and an unverified Peer.
func (a *Authenticator) Authenticate(ctx context.Context, c net.Conn) (net.Conn, Peer, error) {
	if a.TLS == nil && a.SASL == nil {
		return c, Peer{}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, PreambleTimeout)
	defer cancel()
	conn := c
	if a.TLS != nil {
		tc := tls.Server(c, a.TLS)
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, Peer{}, fmt.Errorf("TLS handshake: %w", err)
		}
		if a.SASL == nil {
			return a.authorizeCert(tc)
		}
		conn = tc
	}
	// The whole exchange shares the preamble's time bound, and ctx
	// (the owner closing) interrupts it.
	conn.SetDeadline(time.Now().Add(PreambleTimeout))
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	peer, err := a.SASL.accept(ctx, conn)
	if err != nil {
		if errors.Is(err, errSASLRefused) {
			return nil, Peer{}, fmt.Errorf("%w: %w", ErrPeerRefused, err)
		}
		return nil, Peer{}, fmt.Errorf("SASL: %w", err)
	}
	conn.SetDeadline(time.Time{})
	return conn, peer, nil
}

// authorizeCert asks AuthorizePeer which node the certificate of a mutual
// TLS peer is.
func (a *Authenticator) authorizeCert(tc *tls.Conn) (net.Conn, Peer, error) {
	st := tc.ConnectionState()
	id, ok := a.AuthorizePeer(st)
	if !ok || id < 0 {
		subject := "?"
		if len(st.PeerCertificates) > 0 {
			subject = st.PeerCertificates[0].Subject.String()
		}
		return nil, Peer{}, fmt.Errorf("%w: %s", ErrPeerRefused, subject)
	}
	return tc, Peer{Verified: true, Node: id}, nil
}
