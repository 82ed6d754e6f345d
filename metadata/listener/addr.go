package listener

import (
	"errors"
	"fmt"
	"net"
	"strconv"
)

// hostPortAddr is a TCP address as configured: "host:port", where host
// may be a name. It is kept as written, never resolved: a node's
// container may keep its name across network reconnects but not its IP,
// so each dial resolves the name again.
type hostPortAddr string

func (a hostPortAddr) Network() string { return "tcp" }
func (a hostPortAddr) String() string  { return string(a) }

// ParseAddr checks that addr is host:port with a host and a port number,
// and returns it unresolved; nil for port 0.
func ParseAddr(addr string) (net.Addr, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if host == "" {
		return nil, errors.New("no host")
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("port %q: %w", port, err)
	}
	if p == 0 {
		return nil, nil
	}
	return hostPortAddr(addr), nil
}
