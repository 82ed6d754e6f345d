package listener

import (
	"context"
	"encoding/json"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// rpcServer serves the controller RPC on a loopback listener, answering
// each request with the op's name, and counts the connections it accepts.
type rpcServer struct {
	ln       net.Listener
	accepted atomic.Int32
	mu       sync.Mutex
	conns    []net.Conn
	hold     chan struct{} // when set, "slow" requests wait for it to close
	wg       sync.WaitGroup
}

func newRPCServer(t *testing.T) *rpcServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rpcServer{ln: ln, hold: make(chan struct{})}
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.wg.Go(func() {
				defer c.Close()
				var pre [1]byte
				if _, err := c.Read(pre[:]); err != nil || pre[0] != PreambleRPC {
					return
				}
				Serve(c, time.Second, func(req Request) Response {
					if req.Op == "slow" {
						<-s.hold
					}
					b, _ := json.Marshal(req.Op)
					return Response{Result: b}
				})
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		s.dropAll()
		select {
		case <-s.hold:
		default:
			close(s.hold)
		}
		s.wg.Wait()
	})
	return s
}

// dropAll closes every connection the server accepted, as a restarted
// peer would have.
func (s *rpcServer) dropAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.Close()
	}
	s.conns = nil
}

func call(t *testing.T, p Caller, addr, op string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, answered, err := p.Call(ctx, addr, op, []byte(`{}`))
	if err != nil || answered != nil {
		t.Fatalf("%s: %v %+v", op, err, answered)
	}
	var got string
	if err := json.Unmarshal(res, &got); err != nil || got != op {
		t.Fatalf("%s answered %s (%v)", op, res, err)
	}
}

func TestPoolReusesConnection(t *testing.T) {
	s := newRPCServer(t)
	addr := s.ln.Addr().String()
	p := NewPool(Dialer{})
	defer p.Close()
	for _, op := range []string{"a", "b", "c", "d"} {
		call(t, p, addr, op)
	}
	if n := s.accepted.Load(); n != 1 {
		t.Fatalf("4 calls in a row opened %d connections, want 1", n)
	}
	if n := p.Idle(addr); n != 1 {
		t.Fatalf("%d idle connections, want 1", n)
	}
	// Dialer.Call keeps its connection per call.
	call(t, Dialer{}, addr, "e")
	if n := s.accepted.Load(); n != 2 {
		t.Fatalf("Dialer.Call: %d connections, want 2", n)
	}
}

func TestPoolRedialsDroppedConnection(t *testing.T) {
	s := newRPCServer(t)
	addr := s.ln.Addr().String()
	p := NewPool(Dialer{})
	defer p.Close()
	call(t, p, addr, "a")
	s.dropAll() // the peer restarted: the idle connection is dead
	call(t, p, addr, "b")
	if n := s.accepted.Load(); n != 2 {
		t.Fatalf("%d connections, want 2 (one redial)", n)
	}
	call(t, p, addr, "c")
	if n := s.accepted.Load(); n != 2 {
		t.Fatalf("the redialled connection was not kept: %d connections", n)
	}
}

func TestPoolConcurrentCallsDoNotShare(t *testing.T) {
	s := newRPCServer(t)
	addr := s.ln.Addr().String()
	p := NewPool(Dialer{})
	defer p.Close()
	// A slow call holds its connection: another call meanwhile must not
	// queue behind it on the same connection.
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _, err := p.Call(ctx, addr, "slow", nil)
		done <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for s.accepted.Load() < 1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	call(t, p, addr, "quick")
	close(s.hold)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := s.accepted.Load(); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}
	if n := p.Idle(addr); n != 2 {
		t.Fatalf("%d idle connections, want 2", n)
	}
}

func TestPoolCallHonoursDeadline(t *testing.T) {
	s := newRPCServer(t)
	addr := s.ln.Addr().String()
	p := NewPool(Dialer{})
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err := p.Call(ctx, addr, "slow", nil)
	if err == nil || time.Since(start) > 3*time.Second {
		t.Fatalf("a call past its deadline: %v after %v", err, time.Since(start))
	}
	if n := p.Idle(addr); n != 0 {
		t.Fatalf("a timed-out connection went back to the pool (%d idle)", n)
	}
	// Closed pools keep nothing.
	p.Close()
	close(s.hold)
	call(t, p, addr, "after")
	if n := p.Idle(addr); n != 0 {
		t.Fatalf("a closed pool kept %d connections", n)
	}
}
