package metadata

import (
	"errors"
	"net"

	"github.com/kbroker/kbroker/metadata/listener"
)

// The controller listener's transport (accepting, TLS and SASL, the
// preamble, raft's stream layer, the RPC frames) is package listener;
// this file routes what it accepts to raft or to the controller RPC.

// ControllerSASL authenticates the controller listener's connections with
// SASL (see Config.SASL).
type ControllerSASL = listener.SASL

// SASLServerSession is the server half of one exchange (package
// security/sasl's ServerSession, which metadata does not import).
type SASLServerSession = listener.ServerSession

// SASLClientSession is the client half of one exchange (security/sasl's
// ClientSession).
type SASLClientSession = listener.ClientSession

// acceptLoop accepts connections on the controller listener until it is
// closed (Store.Close) and hands each to route on its own goroutine.
func (s *Store) acceptLoop() {
	listener.Accept(s.ctx, s.ln, s.log, func(c net.Conn) bool {
		if !s.track(c) {
			return false
		}
		s.goFunc(func() { s.route(c) })
		return true
	})
}

// route authenticates a connection, reads its preamble and serves it: raft
// connections are handed to raft's transport, RPC connections are served
// here until they close. c, the accepted socket, is what the Store tracks
// and closes; conn is c or TLS over it.
func (s *Store) route(c net.Conn) {
	conn, peer, err := s.auth.Authenticate(s.ctx, c)
	if err != nil {
		if errors.Is(err, listener.ErrPeerRefused) {
			s.log.Warn("controller listener: peer refused", "remote", c.RemoteAddr(), "err", err)
		} else {
			s.log.Debug("controller listener: peer not authenticated", "remote", c.RemoteAddr(), "err", err)
		}
		s.untrack(c)
		c.Close()
		return
	}
	b, err := listener.ReadPreamble(conn)
	if err != nil {
		s.untrack(c)
		c.Close()
		return
	}
	switch b {
	case listener.PreambleRaft:
		if peer.Verified && !s.cfg.hasVoter(peer.Node) && !s.isRaftVoter(peer.Node) {
			// Only voters send raft requests (leaders and candidates);
			// a broker-only node's certificate must not speak raft. A
			// voter is one of Config.Voters or of raft's configuration
			// (added by AddVoter).
			s.log.Warn("controller listener: raft connection from a node that is not a voter", "node", peer.Node, "remote", c.RemoteAddr())
			s.untrack(c)
			conn.Close()
			return
		}
		// Still tracked: Close closes it after raft shut down, so that
		// raft's connection handler ends; raft's own Close untracks it.
		s.stream.Deliver(&raftConn{Conn: conn, raw: c, s: s})
	case listener.PreambleRPC:
		s.serveRPC(conn, peer)
		s.untrack(c)
		conn.Close()
	default:
		s.log.Debug("controller listener: unknown preamble", "byte", b, "remote", c.RemoteAddr())
		s.untrack(c)
		conn.Close()
	}
}

// raftConn is an accepted raft connection that leaves the Store's set of
// tracked connections when raft closes it.
type raftConn struct {
	net.Conn          // the socket, or TLS over it
	raw      net.Conn // the tracked socket
	s        *Store
}

func (c *raftConn) Close() error {
	c.s.untrack(c.raw)
	return c.Conn.Close()
}

// warnPlaintext logs, once per Open, that the controller listener takes
// anybody.
func (s *Store) warnPlaintext() {
	if s.auth.TLS == nil && s.auth.SASL == nil {
		s.log.Warn("the controller listener is unauthenticated (PLAINTEXT): any host that reaches it can join raft and send controller requests; set TLS for it",
			"addr", s.advertise)
	}
}
