package server

import (
	"net"
	"sync"
)

// connLimits counts open client connections, in all and per IP address,
// against max.connections and max.connections.per.ip (with its
// overrides). Like Kafka, the limits apply across every client listener.
type connLimits struct {
	max       int32
	maxPerIP  int32
	overrides map[string]int32

	mu    sync.Mutex
	total int32
	perIP map[string]int32
}

func (l *connLimits) init(cfg Config) {
	l.max, l.maxPerIP = cfg.maxConnections, cfg.maxConnectionsPerIP
	l.overrides = resolveOverrides(cfg.perIPOverrides)
	l.perIP = make(map[string]int32)
}

// resolveOverrides keys the overrides by IP: a host name is resolved once,
// at start, and stands for each of its addresses (Kafka resolves them the
// same way). A name that does not resolve overrides nothing.
func resolveOverrides(in map[string]int32) map[string]int32 {
	out := make(map[string]int32, len(in))
	for host, n := range in {
		if ip := net.ParseIP(host); ip != nil {
			out[ip.String()] = n
			continue
		}
		addrs, err := net.LookupHost(host)
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if ip := net.ParseIP(a); ip != nil {
				out[ip.String()] = n
			}
		}
	}
	return out
}

// admit counts a new connection from ip, or returns why it is refused:
// "broker" over max.connections, "ip" over the per-IP limit.
func (l *connLimits) admit(ip string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.total >= l.max {
		return "broker"
	}
	limit, ok := l.overrides[ip]
	if !ok {
		limit = l.maxPerIP
	}
	if l.perIP[ip] >= limit {
		return "ip"
	}
	l.total++
	l.perIP[ip]++
	return ""
}

// release uncounts a connection admitted from ip.
func (l *connLimits) release(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if l.perIP[ip]--; l.perIP[ip] <= 0 {
		delete(l.perIP, ip)
	}
}

// open returns the number of admitted connections still open.
func (l *connLimits) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return int(l.total)
}
