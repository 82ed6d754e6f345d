package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sync/semaphore"

	"github.com/kbroker/kbroker/cluster/quotas"
	"github.com/kbroker/kbroker/config"
)

// Config is the connection layer's share of the broker config.
type Config struct {
	maxRequestSize int32 // socket.request.max.bytes
	// maxConnections and maxConnectionsPerIP (with per-IP overrides) bound
	// the open client connections; 0 means none are accepted.
	maxConnections      int32
	maxConnectionsPerIP int32
	perIPOverrides      map[string]int32 // by IP string
	// idleTimeout closes a connection with nothing in flight that sent
	// nothing for this long; 0 is never (connections.max.idle.ms).
	idleTimeout time.Duration
	// frameReadTimeout bounds the time from a request's first byte to its
	// last (see frameReadTimeout in conn.go).
	frameReadTimeout time.Duration
	// queuedMaxRequestBytes bounds the bytes of requests read and not yet
	// answered, across connections; <= 0 is no bound.
	queuedMaxRequestBytes int64
	authorizer            Authorizer
	// FollowerGone, if set, is told the replica id of a follower whose
	// fetch connection the peer dropped (EOF, reset): the broker process
	// may be gone. Called on the connection's goroutine; must not block.
	FollowerGone func(replicaID int32)
	// Listeners is the TLS/SASL security of each client listener, by
	// name; a listener not in it is PLAINTEXT.
	Listeners map[string]*ListenerSecurity
	// FinalizedFeatures, if set, gives the cluster's finalized feature
	// levels and their epoch for ApiVersions v3+; it must not block.
	FinalizedFeatures func() (levels map[string]int16, epoch int64)
}

// ConfigFrom takes the connection layer's keys from the broker
// config. The authorizer is AllowAll until ACLs exist.
func ConfigFrom(cfg *config.Config) Config {
	idle := time.Duration(cfg.ConnectionsMaxIdleMs) * time.Millisecond
	if cfg.ConnectionsMaxIdleMs < 0 {
		idle = 0
	}
	return Config{
		maxRequestSize:        cfg.SocketRequestMaxBytes,
		maxConnections:        cfg.MaxConnections,
		maxConnectionsPerIP:   cfg.MaxConnectionsPerIP,
		perIPOverrides:        cfg.MaxConnectionsPerIPOverrides,
		idleTimeout:           idle,
		frameReadTimeout:      defaultFrameReadTimeout,
		queuedMaxRequestBytes: cfg.QueuedMaxRequestBytes,
		authorizer:            AllowAll{},
	}
}

// Server accepts client connections on the broker's listeners and
// dispatches their requests through the API table.
type Server struct {
	logger       *slog.Logger
	cfg          Config
	apis         map[int16]API
	writeTimeout time.Duration
	metrics      *Metrics
	authorizer   Authorizer
	// requestMem bounds queued request bytes; nil when unbounded.
	requestMem *semaphore.Weighted
	limits     connLimits
	// Quotas are the client quota sensors; nil enforces none.
	Quotas *quotas.Manager

	// abandon is closed when shutdown stops waiting for requests still in
	// progress; their connections are closed without a response.
	abandon     chan struct{}
	abandonOnce sync.Once

	mu        sync.Mutex
	listeners []*boundListener
	wg        sync.WaitGroup
}

type boundListener struct {
	name string
	ln   net.Listener
}

func New(logger *slog.Logger, apis []API, cfg Config, metrics *Metrics) *Server {
	if cfg.authorizer == nil {
		cfg.authorizer = AllowAll{}
	}
	if cfg.frameReadTimeout <= 0 {
		cfg.frameReadTimeout = defaultFrameReadTimeout
	}
	s := &Server{
		logger:       logger,
		cfg:          cfg,
		apis:         make(map[int16]API, len(apis)),
		writeTimeout: 30 * time.Second,
		metrics:      metrics,
		abandon:      make(chan struct{}),
	}
	s.SetAuthorizer(cfg.authorizer)
	s.limits.init(cfg)
	if cfg.queuedMaxRequestBytes > 0 {
		s.requestMem = semaphore.NewWeighted(cfg.queuedMaxRequestBytes)
	}
	for _, a := range apis {
		if _, dup := s.apis[a.Key]; dup {
			panic(fmt.Sprintf("api key %d registered twice", a.Key))
		}
		s.apis[a.Key] = a
	}
	return s
}

// Authorizer is the authorizer requests are checked against.
func (s *Server) Authorizer() Authorizer { return s.authorizer }

// OpenConnections is the number of client connections open now.
func (s *Server) OpenConnections() int { return s.limits.open() }

// SetAuthorizer installs the authorizer requests are checked against.
// Call it before Serve.
func (s *Server) SetAuthorizer(a Authorizer) { s.authorizer = a }

// Listen binds a listener. It does not accept until Serve.
func (s *Server) Listen(name, addr string) (net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listener %s on %s: %w", name, addr, err)
	}
	s.addListener(name, ln)
	return ln.Addr(), nil
}

// addListener serves ln under name from Serve on.
func (s *Server) addListener(name string, ln net.Listener) {
	s.mu.Lock()
	s.listeners = append(s.listeners, &boundListener{name: name, ln: ln})
	s.mu.Unlock()
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

// startConn serves an accepted connection, or closes it at once when it is
// over max.connections or max.connections.per.ip, as Kafka does: the
// client sees the close and backs off.
func (s *Server) startConn(ctx context.Context, bl *boundListener, nc net.Conn) {
	ip := remoteIP(nc)
	if reason := s.limits.admit(ip); reason != "" {
		s.metrics.rejected.WithLabelValues(bl.name, reason).Inc()
		s.logger.Debug("connection over the limit; closing", "listener", bl.name, "remote", nc.RemoteAddr().String(), "limit", reason)
		nc.Close()
		return
	}
	if s.Quotas != nil {
		if t := s.Quotas.ConnectionThrottle(ip, time.Now()); t > 0 {
			s.delayClose(ctx, bl.name, nc, ip, t)
			return
		}
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	c := newConn(s, nc, bl.name)
	gauge := s.metrics.connections.WithLabelValues(bl.name)
	gauge.Inc()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer gauge.Dec()
		defer s.limits.release(ip)
		c.serve(ctx)
	}()
}

// delayClose holds a connection over its ip's connection_creation_rate
// for the throttle time, reading nothing, then closes it, as Kafka does:
// a client that reconnects at once is slowed to the rate instead of
// spinning.
func (s *Server) delayClose(ctx context.Context, listener string, nc net.Conn, ip string, d time.Duration) {
	s.metrics.rejected.WithLabelValues(listener, "ip_rate").Inc()
	s.logger.Debug("connection over the ip's connection_creation_rate; closing after the throttle", "listener", listener, "remote", nc.RemoteAddr().String(), "throttle", d)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer s.limits.release(ip)
		defer nc.Close()
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}()
}

// remoteIP is the peer's IP address as a string, the key of the per-IP
// connection counts.
func remoteIP(nc net.Conn) string {
	if ta, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	host, _, err := net.SplitHostPort(nc.RemoteAddr().String())
	if err != nil {
		return nc.RemoteAddr().String()
	}
	return host
}

// VersionRanges lists the served APIs sorted by key, for ApiVersions.
func (s *Server) VersionRanges() []kmsg.ApiVersionsResponseApiKey {
	out := make([]kmsg.ApiVersionsResponseApiKey, 0, len(s.apis))
	for _, a := range s.apis {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = a.Key, a.Min, a.Max
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ApiKey < out[j].ApiKey })
	return out
}

// Abandon makes connections stop waiting for requests still in progress
// and close. Shutdown calls it when draining takes too long, so a request
// that never completes cannot hold the process up.
func (s *Server) Abandon() { s.abandonOnce.Do(func() { close(s.abandon) }) }

// CloseListeners closes every bound listener (a no-op for closed ones).
func (s *Server) CloseListeners() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, bl := range s.listeners {
		bl.ln.Close()
	}
}

// ServeConn serves one connection already accepted on listener until it
// ends or ctx does, without the accept loop's connection limits and
// throttles: the fuzz tests drive the connection layer through it.
func (s *Server) ServeConn(ctx context.Context, nc net.Conn, listener string) {
	newConn(s, nc, listener).serve(ctx)
}
