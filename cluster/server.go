package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/wire"
)

// handlerFunc serves one decoded request. It returns the response, or nil
// when it has arranged to call rc.Respond (or rc.NoResponse) itself later.
// A returned error closes the connection, as Kafka does for requests it
// cannot make sense of; Kafka error codes go in the response instead.
type handlerFunc func(ctx context.Context, rc *RequestContext, req kmsg.Request) (kmsg.Response, error)

// api is one row of the dispatch table: the versions we serve of one key.
type api struct {
	key      int16
	min, max int16
	handle   handlerFunc
}

// RequestContext is what a handler knows about the request besides its
// body.
type RequestContext struct {
	Header   wire.RequestHeader
	Listener string // the listener name the request arrived on
	Remote   net.Addr
	slot     *slot
}

// Respond completes the request with resp. Only the first call counts.
func (rc *RequestContext) Respond(resp kmsg.Response) { rc.slot.finish(resp, false, nil) }

// NoResponse completes the request without writing anything (acks=0).
func (rc *RequestContext) NoResponse() { rc.slot.finish(nil, true, nil) }

// CloseConnection completes the request by closing the connection once
// every earlier response has been written (acks=0 produce errors).
func (rc *RequestContext) CloseConnection(err error) { rc.slot.finish(nil, false, err) }

// Server accepts client connections on the broker's listeners and
// dispatches their requests through the API table.
type Server struct {
	logger         *slog.Logger
	apis           map[int16]api
	maxRequestSize int32
	writeTimeout   time.Duration
	metrics        *requestMetrics

	// abandon is closed when shutdown stops waiting for requests still in
	// progress; their connections are closed without a response.
	abandon     chan struct{}
	abandonOnce sync.Once

	mu        sync.Mutex
	listeners []*boundListener
	conns     map[*conn]struct{}
	wg        sync.WaitGroup
}

type boundListener struct {
	name string
	ln   net.Listener
}

func newServer(logger *slog.Logger, apis []api, maxRequestSize int32, metrics *requestMetrics) *Server {
	s := &Server{
		logger:         logger,
		apis:           make(map[int16]api, len(apis)),
		maxRequestSize: maxRequestSize,
		writeTimeout:   30 * time.Second,
		metrics:        metrics,
		conns:          make(map[*conn]struct{}),
		abandon:        make(chan struct{}),
	}
	for _, a := range apis {
		if _, dup := s.apis[a.key]; dup {
			panic(fmt.Sprintf("api key %d registered twice", a.key))
		}
		s.apis[a.key] = a
	}
	return s
}

// Listen binds a listener. It does not accept until Serve.
func (s *Server) Listen(name, addr string) (net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listener %s on %s: %w", name, addr, err)
	}
	s.mu.Lock()
	s.listeners = append(s.listeners, &boundListener{name: name, ln: ln})
	s.mu.Unlock()
	return ln.Addr(), nil
}

// Serve accepts on every bound listener until ctx is cancelled, then stops
// accepting, lets each connection finish the requests it has read, and
// returns when all connection goroutines have ended.
func (s *Server) Serve(ctx context.Context) {
	s.mu.Lock()
	lns := append([]*boundListener(nil), s.listeners...)
	s.mu.Unlock()
	var acceptors sync.WaitGroup
	for _, bl := range lns {
		acceptors.Add(1)
		go func() {
			defer acceptors.Done()
			s.acceptLoop(ctx, bl)
		}()
	}
	<-ctx.Done()
	for _, bl := range lns {
		bl.ln.Close()
	}
	acceptors.Wait()
	s.wg.Wait()
}

func (s *Server) acceptLoop(ctx context.Context, bl *boundListener) {
	for {
		nc, err := bl.ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			s.logger.Warn("accept failed", "listener", bl.name, "err", err)
			select {
			case <-time.After(50 * time.Millisecond):
			case <-ctx.Done():
				return
			}
			continue
		}
		if tc, ok := nc.(*net.TCPConn); ok {
			tc.SetNoDelay(true)
		}
		c := &conn{
			srv:      s,
			nc:       nc,
			listener: bl.name,
			logger:   s.logger.With("remote", nc.RemoteAddr().String(), "listener", bl.name),
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			c.serve(ctx)
		}()
	}
}

// versionRanges lists the served APIs sorted by key, for ApiVersions.
func (s *Server) versionRanges() []kmsg.ApiVersionsResponseApiKey {
	out := make([]kmsg.ApiVersionsResponseApiKey, 0, len(s.apis))
	for _, a := range s.apis {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = a.key, a.min, a.max
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ApiKey < out[j].ApiKey })
	return out
}

// Abandon makes connections stop waiting for requests still in progress
// and close. Shutdown calls it when draining takes too long, so a request
// that never completes cannot hold the process up.
func (s *Server) Abandon() { s.abandonOnce.Do(func() { close(s.abandon) }) }

// closeListeners closes every bound listener (a no-op for closed ones).
func (s *Server) closeListeners() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, bl := range s.listeners {
		bl.ln.Close()
	}
}
