package server

import (
	"context"
	"errors"
	"net"
	"time"
)

// Accept backoff: after a failed Accept (EMFILE and ENFILE when the
// process or system is out of file descriptors, ECONNABORTED, ...) the
// acceptor waits before trying again, doubling from acceptBackoffMin up to
// acceptBackoffMax, and starts over after a success. Retrying at once
// would spin a core while the descriptors stay exhausted.
const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
	// acceptLogEvery is the least time between two accept-failure logs; a
	// descriptor shortage fails every accept and must not flood the log.
	acceptLogEvery = 5 * time.Second
)

func (s *Server) acceptLoop(ctx context.Context, bl *boundListener) {
	var (
		backoff    time.Duration
		lastLog    time.Time
		suppressed int
	)
	for {
		nc, err := bl.ln.Accept()
		if err == nil {
			backoff = 0
			s.startConn(ctx, bl, nc)
			continue
		}
		if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
			return
		}
		s.metrics.acceptErrors.WithLabelValues(bl.name).Inc()
		backoff = min(max(2*backoff, acceptBackoffMin), acceptBackoffMax)
		if now := time.Now(); now.Sub(lastLog) >= acceptLogEvery {
			s.logger.Warn("accept failed; backing off", "listener", bl.name, "err", err,
				"backoff", backoff, "failures_not_logged", suppressed)
			lastLog, suppressed = now, 0
		} else {
			suppressed++
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}
