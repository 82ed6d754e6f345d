package metadata

import (
	"context"
	"errors"
	"net"
	"strconv"
	"syscall"
	"time"
)

// probeTimeout bounds the active controller's own check of a broker
// reported dead. A refused connection answers at once; a broker that is
// only slow or cut off by a network partition times out, which proves
// nothing, and the report falls back to DeadReportGrace.
const probeTimeout = 250 * time.Millisecond

// refusesConnections reports whether every registered endpoint of b
// refuses TCP connections: nothing listens there, so the broker process
// is gone (kill -9, crash) even if its last heartbeat is recent. This is
// what lets a dead report fence at once rather than after
// DeadReportGrace: waiting out the grace after a crash is seconds of
// unavailability for every partition the broker led. A wrong report
// cannot fence a live broker this way, since a live broker accepts.
func refusesConnections(ctx context.Context, b *Broker) bool {
	if len(b.Endpoints) == 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var d net.Dialer
	for _, e := range b.Endpoints {
		c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port))))
		if err == nil {
			c.Close()
			return false
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return false
		}
	}
	return true
}
