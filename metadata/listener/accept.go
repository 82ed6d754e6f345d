package listener

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"time"
)

// The controller listener carries two protocols, told apart by the first
// byte a dialer writes on a new connection (inside TLS and after SASL,
// when the listener has them):
//
//	'R'  raft's transport (raft.NetworkTransport over StreamLayer)
//	'C'  the controller RPC (rpc.go)
//
// Anything else, or no byte within PreambleTimeout, closes the connection.
const (
	PreambleRaft    byte = 'R'
	PreambleRPC     byte = 'C'
	PreambleTimeout      = 5 * time.Second

	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
	acceptLogEvery   = 5 * time.Second
)

// Accept accepts connections on ln until it is closed or ctx ends, and
// hands each to handle, which serves it on a goroutine of its own; when
// handle returns false (the owner is closing) the connection is closed and
// Accept returns.
//
// Any other Accept error (EMFILE/ENFILE when the process is out of file
// descriptors, ECONNABORTED, ...) is survived: the loop backs off
// (acceptBackoffMin doubling to acceptBackoffMax, reset by a successful
// Accept) so that it neither spins nor stops serving raft and the RPC
// for good, and logs at most once per acceptLogEvery with the number of
// errors in between.
func Accept(ctx context.Context, ln net.Listener, log *slog.Logger, handle func(net.Conn) bool) {
	var (
		backoff    time.Duration
		lastLog    time.Time
		suppressed int
	)
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || ctx.Err() != nil {
				return
			}
			backoff = min(max(2*backoff, acceptBackoffMin), acceptBackoffMax)
			if now := time.Now(); now.Sub(lastLog) >= acceptLogEvery {
				log.Warn("controller listener: accept failed; retrying",
					"err", err, "backoff", backoff, "errorsSinceLastLog", suppressed)
				lastLog, suppressed = now, 0
			} else {
				suppressed++
			}
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		backoff = 0
		if !handle(c) {
			c.Close()
			return
		}
	}
}

// ReadPreamble reads the byte that picks a connection's protocol, waiting
// at most PreambleTimeout for it.
func ReadPreamble(c net.Conn) (byte, error) {
	var b [1]byte
	c.SetReadDeadline(time.Now().Add(PreambleTimeout))
	if _, err := io.ReadFull(c, b[:]); err != nil {
		return 0, err
	}
	c.SetReadDeadline(time.Time{})
	return b[0], nil
}
