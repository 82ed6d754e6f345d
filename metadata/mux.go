package metadata

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// The controller listener carries two protocols, told apart by the first
// byte a dialer writes on a new connection:
//
//	'R'  raft's transport (raft.NetworkTransport over raftStream)
//	'C'  the controller RPC (rpc.go)
//
// Anything else, or no byte within preambleTimeout, closes the connection.
const (
	preambleRaft    byte = 'R'
	preambleRPC     byte = 'C'
	preambleTimeout      = 5 * time.Second

	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
	acceptLogEvery   = 5 * time.Second
)

// acceptLoop accepts connections on the controller listener until it is
// closed (Store.Close) and hands each to route on its own goroutine.
//
// Any other Accept error (EMFILE/ENFILE when the process is out of file
// descriptors, ECONNABORTED, ...) is survived: the loop backs off
// (acceptBackoffMin doubling to acceptBackoffMax, reset by a successful
// Accept) so that it neither spins nor stops serving raft and the RPC
// for good, and logs at most once per acceptLogEvery with the number of
// errors in between.
func (s *Store) acceptLoop() {
	var (
		backoff    time.Duration
		lastLog    time.Time
		suppressed int
	)
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || s.ctx.Err() != nil {
				return
			}
			backoff = min(max(2*backoff, acceptBackoffMin), acceptBackoffMax)
			if now := time.Now(); now.Sub(lastLog) >= acceptLogEvery {
				s.log.Warn("controller listener: accept failed; retrying",
					"err", err, "backoff", backoff, "errorsSinceLastLog", suppressed)
				lastLog, suppressed = now, 0
			} else {
				suppressed++
			}
			t := time.NewTimer(backoff)
			select {
			case <-s.ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		backoff = 0
		if !s.track(c) {
			c.Close()
			return
		}
		s.goFunc(func() { s.route(c) })
	}
}

// route reads a connection's preamble and serves it: raft connections are
// handed to raft's transport, RPC connections are served here until they
// close.
//
// On an authenticated listener (Config.ServerTLS) the TLS handshake and
// AuthorizePeer come first (authenticate), and the preamble is read inside
// TLS. c, the accepted socket, is what the Store tracks and closes.
func (s *Store) route(c net.Conn) {
	conn, peer, err := s.authenticate(c)
	if err != nil {
		if errors.Is(err, errPeerRefused) {
			s.log.Warn("controller listener: peer refused", "remote", c.RemoteAddr(), "err", err)
		} else {
			s.log.Debug("controller listener: peer not authenticated", "remote", c.RemoteAddr(), "err", err)
		}
		s.untrack(c)
		c.Close()
		return
	}
	var b [1]byte
	conn.SetReadDeadline(time.Now().Add(preambleTimeout))
	if _, err := io.ReadFull(conn, b[:]); err != nil {
		s.untrack(c)
		c.Close()
		return
	}
	conn.SetReadDeadline(time.Time{})
	switch b[0] {
	case preambleRaft:
		if peer.verified && !s.cfg.hasVoter(peer.node) && !s.isRaftVoter(peer.node) {
			// Only voters send raft requests (leaders and candidates);
			// a broker-only node's certificate must not speak raft. A
			// voter is one of Config.Voters or of raft's configuration
			// (added by AddVoter).
			s.log.Warn("controller listener: raft connection from a node that is not a voter", "node", peer.node, "remote", c.RemoteAddr())
			s.untrack(c)
			conn.Close()
			return
		}
		// Still tracked: Close closes it after raft shut down, so that
		// raft's connection handler ends; raft's own Close untracks it.
		s.stream.deliver(&raftConn{Conn: conn, raw: c, s: s})
	case preambleRPC:
		s.serveRPC(conn, peer)
		s.untrack(c)
		conn.Close()
	default:
		s.log.Debug("controller listener: unknown preamble", "byte", b[0], "remote", c.RemoteAddr())
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

// raftStream is the raft.StreamLayer on the shared controller listener:
// Dial writes the 'R' preamble, Accept returns the connections the
// Store's accept loop routed to raft.
type raftStream struct {
	addr  net.Addr // advertised address
	dial  dialer
	conns chan net.Conn
	once  sync.Once
	done  chan struct{}
}

func newRaftStream(addr net.Addr, d dialer) *raftStream {
	return &raftStream{addr: addr, dial: d, conns: make(chan net.Conn), done: make(chan struct{})}
}

var _ raft.StreamLayer = (*raftStream)(nil)

// deliver hands an accepted raft connection to Accept, or closes it once
// the stream is closed.
func (l *raftStream) deliver(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.done:
		c.Close()
	}
}

func (l *raftStream) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops Accept; raft's transport calls it on shutdown. The listener
// itself belongs to the Store.
func (l *raftStream) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *raftStream) Addr() net.Addr { return l.addr }

func (l *raftStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	// raft gives no context; the timeout bounds the connect and the TLS
	// handshake.
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := l.dial.dial(ctx, string(address))
	if err != nil {
		return nil, err
	}
	c.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte{preambleRaft}); err != nil {
		c.Close()
		return nil, err
	}
	c.SetWriteDeadline(time.Time{})
	return c, nil
}
