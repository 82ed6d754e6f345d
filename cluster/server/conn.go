package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/monotime"
	"github.com/kbroker/kbroker/wire"
)

// maxInFlight bounds the requests one connection may have between being
// read and their response being written. When it is reached the reader
// stops reading, which pushes back on the client through TCP.
const maxInFlight = 64

// defaultFrameReadTimeout bounds the time from the first byte of a request
// to its last. Kafka has no such bound (its idle timer restarts on every
// byte, so a client trickling a frame holds it forever); this broker
// gives a client the same 30 s to deliver a request that it gives itself
// to deliver a response (Server.writeTimeout), which is also the default
// request.timeout.ms of Kafka clients: a client waits no longer than that
// for the answer, so a request that took longer to arrive is already lost.
const defaultFrameReadTimeout = 30 * time.Second

var (
	errIdle         = errors.New("connection idle for connections.max.idle.ms")
	errFrameTimeout = errors.New("request frame not received within the frame read timeout")
)

// protocolError is a reason to close the connection that still lets the
// responses to earlier requests be written first (Kafka closes after what
// it has queued): a malformed or unsupported request, a handler error.
type protocolError struct{ err error }

func (e protocolError) Error() string { return e.err.Error() }
func (e protocolError) Unwrap() error { return e.err }

// conn serves one client connection.
//
// The reader goroutine decodes requests and runs their handlers one at a
// time, in arrival order, so appends from one producer connection happen in
// the order they were sent. A handler may finish its response later (a
// delayed fetch or an acks=all produce waiting in a purgatory); the reader
// goes on with the next request meanwhile. The writer goroutine sends
// responses strictly in request order, waiting on each slot in turn.
//
// When the peer goes away (EOF, reset), stalls, or goes idle, the
// connection is dropped at once: the socket is closed without waiting for
// parked requests, whose purgatory entries are removed (slot.onDrop), and
// their memory is given back.
type conn struct {
	srv      *Server
	nc       net.Conn
	listener string
	logger   *slog.Logger

	slots chan *slot // in request order; reader sends, writer receives

	// gone is closed when the connection is dropped: nobody will read the
	// responses still pending.
	gone     chan struct{}
	goneOnce sync.Once

	mu      sync.Mutex
	pending map[*slot]struct{} // read, response not yet written or dropped

	// replicaID is the follower that sent follower fetches on this
	// connection (-1: none); see serverConfig.followerGone.
	replicaID atomic.Int32

	// auth is the connection's TLS/SASL state and principal
	// (conn_auth.go); the reader goroutine owns it.
	auth connAuth

	// mutedUntil (a monotime instant) is when a client quota throttle ends:
	// until then the reader reads nothing more from the client (Kafka
	// mutes a throttled channel).
	mutedUntil atomic.Int64
}

// slot is the place of one request's response in the connection's order.
type slot struct {
	hdr  wire.RequestHeader
	done chan struct{}
	once sync.Once
	mem  int64 // bytes held in the server's request memory; guarded by conn.mu once pending
	size int   // the request frame's size (header and body)
	// frame is the request's pooled frame buffer (a produce's, see
	// pooledFrame), nil when the frame was allocated; the reader gives it
	// back once dispatch returned (releaseFrame).
	frame *[]byte

	onDrop func() // guarded by conn.mu: undoes a parked request

	// raw marks a raw SASL token reply (SaslHandshake v0): rawReply is
	// written with a size prefix and no response header.
	raw      bool
	rawReply []byte

	// Set before done is closed.
	notBefore time.Time // a throttled response to an old client waits until then
	resp      kmsg.Response
	noResp    bool  // acks=0 produce: nothing is written
	closeConn error // close the connection instead of answering
	// release gives back the pooled buffers resp references (a fetch's
	// records, storage.ReadBuffers). The writer calls it in retire, after
	// appendResponse copied resp onto the socket buffer or once resp
	// will never be written; nothing else may call it or keep resp's
	// bytes. A response finished after its slot was retired (a dropped
	// connection) is never released: its buffers go to the GC.
	release func()
}

func (s *slot) finish(resp kmsg.Response, noResp bool, closeErr error) {
	s.finishReleasing(resp, noResp, closeErr, nil)
}

// finishReleasing is finish with the release of resp's pooled buffers
// (slot.release); when the slot was finished already, release is not
// called and the buffers go to the GC.
func (s *slot) finishReleasing(resp kmsg.Response, noResp bool, closeErr error, release func()) {
	s.once.Do(func() {
		s.resp, s.noResp, s.closeConn, s.release = resp, noResp, closeErr, release
		close(s.done)
	})
}

func newConn(s *Server, nc net.Conn, listener string) *conn {
	c := &conn{
		srv:      s,
		nc:       nc,
		listener: listener,
		logger:   s.logger.With("remote", nc.RemoteAddr().String(), "listener", listener),
		slots:    make(chan *slot, maxInFlight),
		gone:     make(chan struct{}),
		pending:  make(map[*slot]struct{}),
		auth:     connAuth{l: s.cfg.Listeners[listener]},
	}
	c.replicaID.Store(-1)
	return c
}

// serve runs the connection until the client goes away, a protocol error
// closes it, or ctx is cancelled. On ctx's end the requests already read
// are answered before it returns (their handlers are bounded by their own
// timeouts); when the peer is gone they are dropped.
func (c *conn) serve(ctx context.Context) {
	defer func() { c.nc.Close() }() // the TLS connection once startAuth wrapped it
	// TLS comes before the first request and before the writer starts, so
	// both goroutines only ever see the secured connection.
	if err := c.startAuth(ctx); err != nil {
		c.logger.Debug("closing connection before its first request", "err", err)
		return
	}
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		c.writeLoop()
	}()

	// An expired read deadline is what unblocks a reader stuck in Read.
	stop := context.AfterFunc(ctx, func() { c.nc.SetReadDeadline(time.Now()) })
	defer stop()

	err := c.readLoop(ctx)
	var perr protocolError
	switch {
	case ctx.Err() != nil:
		// Shutdown: answer what was read.
	case errors.As(err, &perr):
		c.logger.Debug("closing connection", "err", err)
	default:
		if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
			c.logger.Debug("dropping connection", "err", err)
		}
		c.drop()
		if id := c.replicaID.Load(); id >= 0 && c.srv.cfg.FollowerGone != nil {
			c.srv.cfg.FollowerGone(id)
		}
	}
	close(c.slots)
	<-writerDone
}

// drop closes the socket now and abandons every pending request.
func (c *conn) drop() {
	c.goneOnce.Do(func() {
		// Collect the drop callbacks in the same critical section that
		// marks the connection gone: once gone is closed the writer may
		// retire pending slots (clearing their callbacks), and onDrop
		// must either register before this or see the connection gone.
		c.mu.Lock()
		close(c.gone)
		var undo []func()
		for s := range c.pending {
			if s.onDrop != nil {
				undo = append(undo, s.onDrop)
				s.onDrop = nil
			}
		}
		c.mu.Unlock()
		c.nc.Close()
		for _, f := range undo {
			f()
		}
	})
}

// dropped reports whether the connection has been dropped.
func (c *conn) dropped() bool {
	select {
	case <-c.gone:
		return true
	default:
		return false
	}
}

// onDrop arranges for f to run if the connection is dropped before s's
// response is written; f runs at once if it already has been.
func (c *conn) onDrop(s *slot, f func()) {
	c.mu.Lock()
	_, ok := c.pending[s]
	if ok && !c.dropped() {
		s.onDrop = f
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	f()
}

func (c *conn) inFlight() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

// retire ends s's life in the connection: its memory is released, and
// the pooled buffers of a finished response (the writer has encoded it,
// or never will).
func (c *conn) retire(s *slot) {
	if isDone(s) && s.release != nil {
		s.release()
		s.release = nil
	}
	c.mu.Lock()
	delete(c.pending, s)
	s.onDrop = nil
	mem := s.mem
	s.mem = 0
	c.mu.Unlock()
	c.srv.releaseRequestMem(mem)
}

// releaseMem gives s's request bytes back before its response is written,
// for a parked request that no longer references them.
func (c *conn) releaseMem(s *slot) {
	c.mu.Lock()
	mem := s.mem
	s.mem = 0
	c.mu.Unlock()
	c.srv.releaseRequestMem(mem)
}

func (c *conn) readLoop(ctx context.Context) error {
	br := bufio.NewReaderSize(c.nc, 64<<10)
	for {
		if err := c.awaitUnmute(ctx); err != nil {
			return err
		}
		if err := c.awaitRequest(ctx, br); err != nil {
			return err
		}
		if c.auth.expectRawToken() {
			if err := c.rawToken(ctx, br); err != nil {
				return err
			}
			continue
		}
		s, body, err := c.readRequest(ctx, br)
		if err != nil {
			return err
		}
		c.mu.Lock()
		c.pending[s] = struct{}{}
		c.mu.Unlock()
		select {
		case c.slots <- s:
		case <-ctx.Done():
			c.releaseFrame(s)
			c.retire(s)
			return ctx.Err()
		}
		err = c.dispatch(ctx, s, body)
		c.releaseFrame(s)
		if err != nil {
			s.finish(nil, false, err)
			return protocolError{err}
		}
	}
}

// pooledFrameMax bounds the request frames read into a pooled buffer
// (a produce request of several 1 MiB batches is one). Unlike
// wire.ReadFrame, which grows its buffer past 1 MiB only as bytes arrive,
// the whole buffer is taken at once; the frame's size is already held in
// the server's request memory (queued.max.request.bytes), which bounds
// what peers that announce frames and send nothing can make it hold, as
// Kafka's memory pool does.
const pooledFrameMax = wire.MaxPooledBuf

// pooledFrame reports whether the frame of size bytes whose body br is
// about to read may go into a pooled buffer: a Produce's (API key 0)
// only. Its handler copies the records into the log (pwrite) and keeps
// nothing of the request once it returns: an acks=all produce parks with
// its response only (park's keepsRequest false), kmsg copies the topic
// and transactional id strings, the header's client id is a copy, and
// storage keeps numbers of a batch (producer state, transactions, the
// recent-batches ring, indexes), never its bytes. Requests whose decoded
// form is kept (group, transaction and SASL requests keep member
// metadata, assignments, tokens) are never pooled.
func pooledFrame(br *bufio.Reader, size int32) bool {
	if size < 2 || size > pooledFrameMax {
		return false
	}
	key, err := br.Peek(2)
	return err == nil && binary.BigEndian.Uint16(key) == 0
}

// releaseFrame gives s's pooled frame back once its handler returned.
func (c *conn) releaseFrame(s *slot) {
	if s.frame != nil {
		wire.PutBuf(s.frame)
		s.frame = nil
	}
}

// mute stops reading from the connection for d from now (or longer, if
// an earlier throttle ends later).
func (c *conn) mute(d time.Duration) {
	until := monotime.Of(time.Now().Add(d))
	for {
		cur := c.mutedUntil.Load()
		if cur >= until || c.mutedUntil.CompareAndSwap(cur, until) {
			return
		}
	}
}

// awaitUnmute waits until a client quota throttle of the connection
// ends. Requests the client sends meanwhile stay in the socket; the wait
// does not count as idle time.
func (c *conn) awaitUnmute(ctx context.Context) error {
	for {
		d := time.Until(monotime.Time(c.mutedUntil.Load()))
		if d <= 0 {
			return nil
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-c.gone:
			t.Stop()
			return net.ErrClosed
		}
	}
}

// awaitRequest waits for the first byte of the next request. With nothing
// in flight the wait is bounded by connections.max.idle.ms; a parked
// request (a long fetch) keeps the connection alive.
func (c *conn) awaitRequest(ctx context.Context, br *bufio.Reader) error {
	idle := c.srv.cfg.idleTimeout
	for br.Buffered() == 0 {
		var deadline time.Time
		if idle > 0 {
			deadline = time.Now().Add(idle)
		}
		// Set the deadline before looking at ctx: the shutdown AfterFunc
		// sets it after ctx ends, so it cannot be overwritten here.
		c.nc.SetReadDeadline(deadline)
		if err := ctx.Err(); err != nil {
			return err
		}
		_, err := br.Peek(1)
		if err == nil {
			return nil
		}
		if !isTimeout(err) || ctx.Err() != nil {
			return err
		}
		if c.inFlight() > 0 {
			continue
		}
		c.srv.metrics.closedIdle.Inc()
		return fmt.Errorf("%w (%v)", errIdle, idle)
	}
	return nil
}

// readRequest reads one frame whose first byte has arrived and parses its
// header. The frame's bytes are taken from the server's request memory
// before its body is read, and stay taken until the slot is retired.
func (c *conn) readRequest(ctx context.Context, br *bufio.Reader) (*slot, []byte, error) {
	if err := c.frameDeadline(ctx); err != nil {
		return nil, nil, err
	}
	var sizeBuf [4]byte
	if _, err := io.ReadFull(br, sizeBuf[:]); err != nil {
		return nil, nil, c.frameErr(err)
	}
	size := int32(binary.BigEndian.Uint32(sizeBuf[:]))
	limit := c.auth.frameLimit(c.srv.cfg.maxRequestSize)
	if size < 0 || size > limit {
		c.logger.Warn("refusing oversize request frame", "size", size, "limit", limit, "socket.request.max.bytes", c.srv.cfg.maxRequestSize)
		return nil, nil, wire.ErrFrameTooLarge
	}
	mem, err := c.srv.acquireRequestMem(ctx, size)
	if err != nil {
		return nil, nil, err
	}
	// The wait for memory is the broker's doing: the client gets its full
	// time for the body.
	if err := c.frameDeadline(ctx); err != nil {
		c.srv.releaseRequestMem(mem)
		return nil, nil, err
	}
	var frame []byte
	var pooled *[]byte
	if pooledFrame(br, size) {
		pooled = wire.GetBuf(int(size))
		frame = *pooled
		if _, err = io.ReadFull(br, frame); errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF // as ReadFrame: the size was read
		}
	} else {
		frame, err = wire.ReadFrame(io.MultiReader(bytes.NewReader(sizeBuf[:]), br), limit)
	}
	if err != nil {
		if pooled != nil {
			wire.PutBuf(pooled)
		}
		c.srv.releaseRequestMem(mem)
		return nil, nil, c.frameErr(err)
	}
	hdr, body, err := wire.ParseRequestHeader(frame)
	if err != nil {
		if pooled != nil {
			wire.PutBuf(pooled)
		}
		c.srv.releaseRequestMem(mem)
		return nil, nil, protocolError{fmt.Errorf("request header: %w", err)}
	}
	return &slot{hdr: hdr, done: make(chan struct{}), mem: mem, size: int(size), frame: pooled}, body, nil
}

func (c *conn) frameDeadline(ctx context.Context) error {
	c.nc.SetReadDeadline(time.Now().Add(c.srv.cfg.frameReadTimeout))
	return ctx.Err()
}

func (c *conn) frameErr(err error) error {
	if isTimeout(err) {
		c.srv.metrics.closedIdle.Inc()
		return fmt.Errorf("%w: %w", errFrameTimeout, err)
	}
	return err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// dispatch decodes and handles one request. A returned error closes the
// connection: an unknown API or version, a body that does not decode or is
// over a per-request bound, a handler error or panic.
func (c *conn) dispatch(ctx context.Context, s *slot, body []byte) error {
	hdr := s.hdr
	a, ok := c.srv.apis[hdr.APIKey]
	if !ok || hdr.APIVersion < a.Min || hdr.APIVersion > a.Max {
		if hdr.APIKey == apiVersionsKey {
			// Kafka answers an ApiVersions it cannot parse in v0 so the
			// client can learn the ranges and retry.
			resp := c.apiVersionsResponse(0)
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			s.finish(resp, false, nil)
			return nil
		}
		return fmt.Errorf("unsupported api key %d version %d", hdr.APIKey, hdr.APIVersion)
	}
	// Nothing of an unauthenticated client is decoded but the requests
	// that authenticate it.
	if err := c.auth.admit(hdr.APIKey); err != nil {
		c.logger.Info("closing connection", "err", err)
		return err
	}
	req := kmsg.RequestForKey(hdr.APIKey)
	req.SetVersion(hdr.APIVersion)
	if err := checkArrayBounds(req, body); err != nil {
		c.srv.metrics.refused.WithLabelValues(kmsg.NameForKey(hdr.APIKey)).Inc()
		c.logger.Warn("refusing request", "api", kmsg.NameForKey(hdr.APIKey), "err", err)
		return err
	}
	if err := req.ReadFrom(body); err != nil {
		return fmt.Errorf("decoding %s v%d: %w", kmsg.NameForKey(hdr.APIKey), hdr.APIVersion, err)
	}
	rc := &RequestContext{
		Header:    hdr,
		Principal: c.auth.principal,
		Listener:  c.listener,
		Remote:    c.nc.RemoteAddr(),
		conn:      c,
		slot:      s,

		TokenRequestsAllowed: c.auth.tokenRequestsAllowed(),
	}
	rc.authz.authorizer = c.srv.authorizer
	rc.requestBytes = s.size
	rc.exempt = rc.quotaExempt(req)
	start := time.Now()
	resp, err := c.srv.runHandler(ctx, a, rc, req)
	took := time.Since(start)
	c.srv.metrics.observe(hdr.APIKey, took, err)
	if err != nil {
		return err
	}
	if resp != nil {
		rc.handlerTime = took
		rc.Respond(resp)
	} else if t := rc.requestTimeThrottle(took); t > 0 {
		// Answered later (a parked fetch or produce): its handler
		// time still counts against request_percentage.
		c.mute(t)
	}
	return nil
}

// Bounds of one coalesced write: responses already complete are gathered
// into one buffer until they come to about maxCoalescedBytes (by their
// slotSizeHint, before encoding) or maxCoalesced responses. A connection
// keeps its own buffer up to maxRetainedWriteBuf (one that grew past it
// is dropped after its write); a write whose fetch
// records alone need more is encoded into a buffer of the shared pools
// (wire.GetBuf) instead, so large fetch responses reuse buffers across
// connections rather than growing one per write and dropping it.
const (
	maxCoalescedBytes   = 256 << 10
	maxCoalesced        = 16
	maxRetainedWriteBuf = 64 << 10
	minPooledWrite      = 16 << 10
)

// writeLoop writes responses in request order. It waits for the oldest
// slot, then takes every following slot whose response is already
// complete without waiting, and writes them all with one syscall: under
// load (many acks=all produces completed by one high watermark move,
// pipelined fetches) this replaces a write per response with one per
// burst.
func (c *conn) writeLoop() {
	var buf []byte
	var batch []*slot
	head, ok := <-c.slots
	for ok {
		c.await(head)
		batch = append(batch[:0], head)
		head, ok = nil, false
		closed := false
		size := 0 // about the encoded size of the batch (slotSizeHint)
		if isDone(batch[0]) {
			size = slotSizeHint(batch[0])
		}
	gather:
		for len(batch) < maxCoalesced && size < maxCoalescedBytes {
			select {
			case next, more := <-c.slots:
				if !more {
					closed = true
					break gather
				}
				if next.ready() {
					batch = append(batch, next)
					size += slotSizeHint(next)
					continue
				}
				head, ok = next, true
				break gather
			default:
				break gather
			}
		}
		if size > max(cap(buf), minPooledWrite) {
			pooled := wire.GetBuf(size)
			// Written (or abandoned) when writeBatch returns; an
			// underestimate may have grown out of it onto the heap.
			_ = c.writeBatch(batch, (*pooled)[:0])
			wire.PutBuf(pooled)
			buf = buf[:0]
		} else {
			buf = c.writeBatch(batch, buf[:0])
			if cap(buf) > maxRetainedWriteBuf {
				buf = nil
			}
		}
		for _, s := range batch {
			c.retire(s)
		}
		clear(batch)
		if !ok && !closed {
			head, ok = <-c.slots
		}
	}
}

// await waits until s's response is complete, the connection is dropped,
// or shutdown abandons the requests still running.
func (c *conn) await(s *slot) {
	select {
	case <-s.done:
	case <-c.gone:
		return
	case <-c.srv.abandon:
		// Shutdown gave up on requests that never completed: close
		// rather than wait for them.
		c.drop()
		return
	}
	if d := time.Until(s.notBefore); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-c.gone:
		case <-c.srv.abandon:
		}
	}
}

// slotSizeHint is about the encoded size of s's complete response. For a
// fetch response the record bytes are most of it (a few dozen bytes per
// partition and topic besides); other responses count a little.
func slotSizeHint(s *slot) int {
	f, ok := s.resp.(*kmsg.FetchResponse)
	if !ok {
		return 256
	}
	n := 64
	for i := range f.Topics {
		t := &f.Topics[i]
		n += 32 + len(t.Topic)
		for j := range t.Partitions {
			p := &t.Partitions[j]
			n += 64 + len(p.RecordBatches) + 16*len(p.AbortedTransactions)
		}
	}
	return n
}

// ready reports whether s's response is complete and can share a write
// with those before it (a slot that closes the connection cannot).
func (s *slot) ready() bool {
	select {
	case <-s.done:
		return s.closeConn == nil && !time.Now().Before(s.notBefore)
	default:
		return false
	}
}

// writeBatch encodes the responses of batch, whose first slot is complete
// and the rest ready, into buf and writes them at once; a slot that asks
// to close the connection closes it after those before it are written.
func (c *conn) writeBatch(batch []*slot, buf []byte) []byte {
	for _, s := range batch {
		if c.dropped() {
			return buf
		}
		switch {
		case !isDone(s):
			// Dropped or abandoned while waiting: nothing to write.
			return buf
		case s.noResp:
			continue
		case s.closeConn != nil:
			c.flush(buf)
			c.drop()
			return buf
		}
		if s.raw {
			buf = appendRawReply(buf, s)
			continue
		}
		buf = appendResponse(buf, s)
	}
	c.flush(buf)
	return buf
}

func isDone(s *slot) bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// flush writes buf, dropping the connection on error.
func (c *conn) flush(buf []byte) {
	if len(buf) == 0 || c.dropped() {
		return
	}
	c.nc.SetWriteDeadline(time.Now().Add(c.srv.writeTimeout))
	if _, err := c.nc.Write(buf); err != nil {
		c.drop()
	}
}

// appendResponse appends s's response frame to buf, encoding the body in
// place behind the size and header (no intermediate copy of the body).
func appendResponse(buf []byte, s *slot) []byte {
	// The ApiVersions response header never has tagged fields, so
	// clients can parse it before they know our versions.
	flexible := s.resp.IsFlexible() && s.hdr.APIKey != apiVersionsKey
	start := len(buf)
	buf = append(buf, 0, 0, 0, 0) // size, set below
	buf = binary.BigEndian.AppendUint32(buf, uint32(s.hdr.CorrelationID))
	if flexible {
		buf = append(buf, 0) // no tagged fields
	}
	buf = s.resp.AppendTo(buf)
	binary.BigEndian.PutUint32(buf[start:], uint32(len(buf)-start-4))
	return buf
}

// appendRawReply appends a SASL v0 raw token reply: size, then the bytes,
// with no response header (the legacy framing after SaslHandshake v0).
func appendRawReply(buf []byte, s *slot) []byte {
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(s.rawReply)))
	return append(buf, s.rawReply...)
}

// apiVersionsKey is special in the connection code: its response header
// never carries tagged fields and an unsupported version is answered.
const apiVersionsKey = 18
