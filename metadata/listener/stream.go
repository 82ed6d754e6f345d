package listener

import (
	"context"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// StreamLayer is the raft.StreamLayer on the shared controller listener:
// Dial writes the 'R' preamble, Accept returns the connections the
// listener's owner routed to raft (Deliver).
type StreamLayer struct {
	addr  net.Addr // advertised address
	dial  Dialer
	conns chan net.Conn
	once  sync.Once
	done  chan struct{}
}

// NewStreamLayer returns the stream layer of a node advertised at addr
// that dials other nodes with d.
func NewStreamLayer(addr net.Addr, d Dialer) *StreamLayer {
	return &StreamLayer{addr: addr, dial: d, conns: make(chan net.Conn), done: make(chan struct{})}
}

var _ raft.StreamLayer = (*StreamLayer)(nil)

// Deliver hands an accepted raft connection to Accept, or closes it once
// the stream is closed.
func (l *StreamLayer) Deliver(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.done:
		c.Close()
	}
}

// Accept returns the next connection Deliver hands over.
func (l *StreamLayer) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops Accept; raft's transport calls it on shutdown. The listener
// itself belongs to the owner.
func (l *StreamLayer) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

// Addr is the node's advertised address.
func (l *StreamLayer) Addr() net.Addr { return l.addr }

// Dial connects to another node's controller listener for raft.
func (l *StreamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	// raft gives no context; the timeout bounds the connect and the TLS
	// handshake.
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := l.dial.Dial(ctx, string(address))
	if err != nil {
		return nil, err
	}
	c.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte{PreambleRaft}); err != nil {
		c.Close()
		return nil, err
	}
	c.SetWriteDeadline(time.Time{})
	return c, nil
}
