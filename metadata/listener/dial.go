package listener

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"
)

// Dialer opens connections to controller listeners: TCP, then a TLS
// handshake when TLS is set, then a SASL exchange when SASL is set.
type Dialer struct {
	TLS  *tls.Config // nil: no TLS; an empty ServerName is set to the dialed host
	SASL *SASL       // nil: no SASL exchange
}

// dialTimeout bounds one connect and handshake to a controller
// listener. A node that was killed or cut off leaves its address
// unanswered (no RST) and a dial would otherwise spend the caller's whole
// deadline on it, while a new leader may be elected in half a second.
const dialTimeout = time.Second

// Dial connects to addr; ctx and dialTimeout bound the connect and the
// handshakes.
func (d Dialer) Dial(ctx context.Context, addr string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	c, err := d.dialTLS(ctx, addr)
	if err != nil || d.SASL == nil {
		return c, err
	}
	if err := d.SASL.dial(ctx, c, addr); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// dialTLS connects to addr, with a TLS handshake when d.TLS is set.
func (d Dialer) dialTLS(ctx context.Context, addr string) (net.Conn, error) {
	var nd net.Dialer
	c, err := nd.DialContext(ctx, "tcp", addr)
	if err != nil || d.TLS == nil {
		return c, err
	}
	cfg := d.TLS
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
