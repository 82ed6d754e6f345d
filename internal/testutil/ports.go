package testutil

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"syscall"
)

// Cleaner is the part of testing.TB Listen needs.
type Cleaner interface {
	TB
	Cleanup(func())
}

// Listen returns a TCP listener on 127.0.0.1 with an OS-chosen port,
// closed when the test ends. Hand the listener itself to the code that
// serves: the port is never free between choosing and binding it.
func Listen(t Cleaner) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen on 127.0.0.1:0: %v", err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// Ports are distinct 127.0.0.1 ports chosen by the OS, each held by an
// open TCP listener and a UDP socket (memberlist gossip binds both) until
// Release. While held, no other bind (port 0 or explicit) in any process
// can get them, so a set of ports handed out together is always distinct
// and never overlaps another test's set.
//
// The window that remains: between Release and the subprocess binding the
// port, another process may take it (typically as the local port of an
// outgoing connection). A subprocess cannot be handed the socket without
// the broker accepting inherited listeners, so callers detect that failure
// with AddrInUse and retry the whole start with a fresh reservation. A
// process restarted on the same port later has the same window, without a
// retry (its address is in other nodes' configuration).
type Ports struct {
	tcp   []net.Listener
	udp   []net.PacketConn
	ports []int
}

// ReservePorts reserves n ports.
func ReservePorts(n int) (*Ports, error) {
	p := &Ports{}
	for tries := 0; len(p.ports) < n; tries++ {
		if tries >= 20*n {
			return nil, errors.Join(fmt.Errorf("reserving %d ports: no port free for both TCP and UDP after %d tries", n, tries), p.Release())
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, errors.Join(fmt.Errorf("reserving a port: %w", err), p.Release())
		}
		port := ln.Addr().(*net.TCPAddr).Port
		pc, err := net.ListenPacket("udp", ln.Addr().String())
		if err != nil {
			// UDP port taken by someone else: keep the TCP one bound
			// while trying another, so the OS does not offer it again.
			defer ln.Close()
			continue
		}
		p.tcp, p.udp, p.ports = append(p.tcp, ln), append(p.udp, pc), append(p.ports, port)
	}
	return p, nil
}

// MustReservePorts is ReservePorts failing the test on error.
func MustReservePorts(t TB, n int) *Ports {
	t.Helper()
	p, err := ReservePorts(n)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return p
}

// Port returns the i-th port.
func (p *Ports) Port(i int) int { return p.ports[i] }

// Addr returns "127.0.0.1:<i-th port>".
func (p *Ports) Addr(i int) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.ports[i]))
}

// Release frees the ports for the subprocess to bind; call it right before
// starting it. Safe to call more than once. An error means a socket may
// still hold its port: the subprocess would fail to bind it.
func (p *Ports) Release() error {
	var errs []error
	for _, ln := range p.tcp {
		if err := ln.Close(); err != nil {
			errs = append(errs, fmt.Errorf("releasing TCP %v: %w", ln.Addr(), err))
		}
	}
	for _, pc := range p.udp {
		if err := pc.Close(); err != nil {
			errs = append(errs, fmt.Errorf("releasing UDP %v: %w", pc.LocalAddr(), err))
		}
	}
	p.tcp, p.udp = nil, nil
	return errors.Join(errs...)
}

// MustRelease is Release failing the test on error.
func (p *Ports) MustRelease(t TB) {
	t.Helper()
	if err := p.Release(); err != nil {
		t.Fatalf("%v", err)
	}
}

// AddrInUse reports whether err, or a subprocess's log text, says a bind
// failed because the address was already in use: the window Ports
// documents, worth a retry with fresh ports.
func AddrInUse(err error, logText string) bool {
	if err != nil && errors.Is(err, syscall.EADDRINUSE) {
		return true
	}
	return strings.Contains(logText, "address already in use") ||
		(err != nil && strings.Contains(err.Error(), "address already in use"))
}
