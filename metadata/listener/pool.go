package listener

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"sync"
	"time"
)

// Caller sends one controller RPC to addr: Dialer.Call (a connection per
// call) and Pool.Call (connections kept between calls).
type Caller interface {
	Call(ctx context.Context, addr, op string, payload []byte) (json.RawMessage, *WireError, error)
}

// Pool keeps controller RPC connections open between calls, up to
// MaxIdlePerPeer idle ones per address. A node's calls to the active
// controller (heartbeats, ISR changes, forwarded requests) each cost a
// dial, a TLS handshake and a SASL exchange otherwise, and leave a socket
// in TIME_WAIT on both ends. A connection carries one call at a time: the
// server answers a connection's requests in order and a response names no
// request, so calls in flight at once each hold their own.
//
// A connection goes back to the pool only after a call whose answer it
// read whole, before its context ended. An idle connection the peer has
// closed (it restarted, or lost the leadership and shut down) fails the
// next call before any answer arrives: the pool then drops every idle
// connection to that address and sends the call once more on a new one.
// As with any transport failure after sending, the request may have run
// once already (the callers' retries live with that).
//
// A Pool starts no goroutine. Close closes the idle connections; calls in
// flight keep theirs until they end, and close them then.
type Pool struct {
	d Dialer

	mu     sync.Mutex
	idle   map[string][]*pooledConn
	closed bool
}

// MaxIdlePerPeer bounds the idle connections a Pool keeps to one address:
// the calls a node has in flight to the controller at once (a heartbeat,
// a batch of ISR changes, forwarded admin requests, or up to 16 single
// ISR changes before metadata.version 3).
const MaxIdlePerPeer = 16

// idleTimeout drops a connection idle for longer: one to a node that is
// no longer the leader would otherwise hold a descriptor on both ends.
const idleTimeout = time.Minute

type pooledConn struct {
	c    net.Conn
	r    *bufio.Reader
	used time.Time // when it was last put back
}

// NewPool returns a Pool dialing with d.
func NewPool(d Dialer) *Pool {
	return &Pool{d: d, idle: map[string][]*pooledConn{}}
}

// Call sends one request to addr on an idle connection or a new one, with
// the deadline of ctx, and returns as Dialer.Call does.
func (p *Pool) Call(ctx context.Context, addr, op string, payload []byte) (json.RawMessage, *WireError, error) {
	fresh := false
	for {
		pc, reused := p.take(addr, fresh)
		if pc == nil {
			c, err := p.d.dialRPC(ctx, addr)
			if err != nil {
				return nil, nil, err
			}
			pc = &pooledConn{c: c, r: bufio.NewReader(c)}
		}
		res, answered, replied, keep, err := roundTrip(ctx, pc.c, pc.r, op, payload)
		if err == nil {
			if keep {
				p.put(addr, pc)
			} else {
				pc.c.Close()
			}
			return res, answered, nil
		}
		pc.c.Close()
		if reused && !replied && ctx.Err() == nil && !fresh {
			// Most likely closed by the peer while idle; so are the others.
			p.drop(addr)
			fresh = true
			continue
		}
		return nil, nil, err
	}
}

// take returns an idle connection to addr (the most recently used), or
// nil; fresh: always nil.
func (p *Pool) take(addr string, fresh bool) (*pooledConn, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for !fresh && len(p.idle[addr]) > 0 {
		l := p.idle[addr]
		pc := l[len(l)-1]
		l[len(l)-1] = nil
		p.idle[addr] = l[:len(l)-1]
		if time.Since(pc.used) < idleTimeout {
			return pc, true
		}
		pc.c.Close()
	}
	return nil, false
}

// put makes pc idle again, or closes it when the pool is closed or full.
func (p *Pool) put(addr string, pc *pooledConn) {
	pc.used = time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.idle[addr]) >= MaxIdlePerPeer {
		pc.c.Close()
		return
	}
	p.idle[addr] = append(p.idle[addr], pc)
}

// drop closes the idle connections to addr.
func (p *Pool) drop(addr string) {
	p.mu.Lock()
	l := p.idle[addr]
	delete(p.idle, addr)
	p.mu.Unlock()
	for _, pc := range l {
		pc.c.Close()
	}
}

// Close closes every idle connection; those of calls in flight are closed
// when the calls end.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = map[string][]*pooledConn{}
	p.mu.Unlock()
	for _, l := range idle {
		for _, pc := range l {
			pc.c.Close()
		}
	}
}

// Idle returns the idle connections to addr (for tests and metrics).
func (p *Pool) Idle(addr string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle[addr])
}

// roundTrip writes one request on c and reads its response from r, with
// the deadline of ctx; when ctx ends first, c is closed. replied reports
// whether any byte of a response arrived, keep whether c is left open,
// without a deadline, ready for the next request.
func roundTrip(ctx context.Context, c net.Conn, r *bufio.Reader, op string, payload []byte) (result json.RawMessage, answered *WireError, replied, keep bool, err error) {
	stop := context.AfterFunc(ctx, func() { c.Close() })
	req := Request{Op: op, Payload: payload}
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
		req.TimeoutMs = max(1, time.Until(dl).Milliseconds())
	}
	var resp Response
	if err = WriteFrame(c, &req); err == nil {
		if _, err = r.Peek(1); err == nil {
			replied = true
			err = ReadFrame(r, &resp)
		}
	}
	// stop fails when ctx ended as the answer arrived: c is closed, or
	// about to be.
	keep = stop()
	if err != nil {
		return nil, nil, replied, false, err
	}
	c.SetDeadline(time.Time{})
	return resp.Result, resp.Error, true, keep, nil
}
