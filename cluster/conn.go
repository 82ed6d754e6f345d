package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/wire"
)

// maxInFlight bounds the requests one connection may have between being
// read and their response being written. When it is reached the reader
// stops reading, which pushes back on the client through TCP.
const maxInFlight = 64

// conn serves one client connection.
//
// The reader goroutine decodes requests and runs their handlers one at a
// time, in arrival order, so appends from one producer connection happen in
// the order they were sent. A handler may finish its response later (a
// delayed fetch or an acks=all produce waiting in a purgatory); the reader
// goes on with the next request meanwhile. The writer goroutine sends
// responses strictly in request order, waiting on each slot in turn.
type conn struct {
	srv      *Server
	nc       net.Conn
	listener string
	logger   *slog.Logger

	slots chan *slot // in request order; reader sends, writer receives
}

// slot is the place of one request's response in the connection's order.
type slot struct {
	hdr  wire.RequestHeader
	done chan struct{}
	once sync.Once

	// Set before done is closed.
	resp      kmsg.Response
	noResp    bool  // acks=0 produce: nothing is written
	closeConn error // close the connection instead of answering
}

func (s *slot) finish(resp kmsg.Response, noResp bool, closeErr error) {
	s.once.Do(func() {
		s.resp, s.noResp, s.closeConn = resp, noResp, closeErr
		close(s.done)
	})
}

// serve runs the connection until the client goes away, a protocol error
// closes it, or ctx is cancelled. In-flight requests finish before it
// returns (their handlers are bounded by their own timeouts).
func (c *conn) serve(ctx context.Context) {
	defer c.nc.Close()
	c.slots = make(chan *slot, maxInFlight)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		c.writeLoop()
	}()

	// Closing the socket is what unblocks a reader stuck in Read.
	stop := context.AfterFunc(ctx, func() { c.nc.SetReadDeadline(time.Now()) })
	defer stop()

	err := c.readLoop(ctx)
	close(c.slots)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && ctx.Err() == nil {
		c.logger.Debug("closing connection", "err", err)
	}
	<-writerDone
}

func (c *conn) readLoop(ctx context.Context) error {
	br := bufio.NewReaderSize(c.nc, 64<<10)
	for {
		frame, err := wire.ReadFrame(br, c.srv.maxRequestSize)
		if err != nil {
			if errors.Is(err, wire.ErrFrameTooLarge) {
				c.logger.Warn("refusing oversize request frame", "err", err)
			}
			return err
		}
		hdr, body, err := wire.ParseRequestHeader(frame)
		if err != nil {
			return fmt.Errorf("request header: %w", err)
		}
		s := &slot{hdr: hdr, done: make(chan struct{})}
		select {
		case c.slots <- s:
		case <-ctx.Done():
			return ctx.Err()
		}
		if err := c.dispatch(ctx, s, body); err != nil {
			s.finish(nil, false, err)
			return err
		}
	}
}

// dispatch decodes and handles one request. A returned error closes the
// connection: an unknown API or version, or a body that does not decode.
func (c *conn) dispatch(ctx context.Context, s *slot, body []byte) error {
	hdr := s.hdr
	a, ok := c.srv.apis[hdr.APIKey]
	if !ok || hdr.APIVersion < a.min || hdr.APIVersion > a.max {
		if hdr.APIKey == apiVersionsKey {
			// Kafka answers an ApiVersions it cannot parse in v0 so the
			// client can learn the ranges and retry.
			resp := c.srv.apiVersionsResponse(0)
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			s.finish(resp, false, nil)
			return nil
		}
		return fmt.Errorf("unsupported api key %d version %d", hdr.APIKey, hdr.APIVersion)
	}
	req := kmsg.RequestForKey(hdr.APIKey)
	req.SetVersion(hdr.APIVersion)
	if err := req.ReadFrom(body); err != nil {
		return fmt.Errorf("decoding %s v%d: %w", kmsg.NameForKey(hdr.APIKey), hdr.APIVersion, err)
	}
	rc := &RequestContext{
		Header:   hdr,
		Listener: c.listener,
		Remote:   c.nc.RemoteAddr(),
		slot:     s,
	}
	start := time.Now()
	resp, err := a.handle(ctx, rc, req)
	c.srv.metrics.observe(hdr.APIKey, time.Since(start), err)
	if err != nil {
		return err
	}
	if resp != nil {
		rc.Respond(resp)
	}
	return nil
}

func (c *conn) writeLoop() {
	var buf []byte
	broken := false
	for s := range c.slots {
		select {
		case <-s.done:
		case <-c.srv.abandon:
			// Shutdown gave up on requests that never completed: close
			// rather than wait for them.
			c.nc.Close()
			for range c.slots {
			}
			return
		}
		if broken || s.noResp {
			continue
		}
		if s.closeConn != nil {
			broken = true
			c.nc.Close()
			continue
		}
		// The ApiVersions response header never has tagged fields, so
		// clients can parse it before they know our versions.
		flexible := s.resp.IsFlexible() && s.hdr.APIKey != apiVersionsKey
		buf = wire.AppendResponse(buf[:0], s.hdr.CorrelationID, flexible, s.resp.AppendTo(nil))
		c.nc.SetWriteDeadline(time.Now().Add(c.srv.writeTimeout))
		if _, err := c.nc.Write(buf); err != nil {
			broken = true
			c.nc.Close()
		}
	}
}
