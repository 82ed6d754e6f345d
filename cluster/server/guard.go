package server

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/purgatory"
)

// errHandlerPanic closes the connection of a request whose handler
// panicked; the broker and every other connection go on.
var errHandlerPanic = errors.New("request handler panicked")

// runHandler runs the request's authorization step and then its handler,
// turning a panic in either into an error that closes only this
// connection.
func (s *Server) runHandler(ctx context.Context, a API, rc *RequestContext, req kmsg.Request) (resp kmsg.Response, err error) {
	defer func() {
		if r := recover(); r != nil {
			resp, err = nil, s.recovered(rc, r)
		}
	}()
	// The one authorization step: every action the API declares, in one
	// call; handlers then read the decisions with rc.Authorized.
	if a.Actions != nil {
		rc.authz.authorize(rc, a.Actions(rc, req))
	}
	return a.Handle(ctx, rc, req)
}

// recovered logs and counts a recovered panic and returns the error that
// closes the request's connection.
func (s *Server) recovered(rc *RequestContext, r any) error {
	name := rc.apiName()
	s.metrics.panics.WithLabelValues(name).Inc()
	s.logger.Error("request handler panicked; closing its connection",
		"api", name, "version", rc.Header.APIVersion, "remote", addrString(rc.Remote),
		"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	return fmt.Errorf("%w: %s: %v", errHandlerPanic, name, r)
}

func addrString(a interface{ String() string }) string {
	if a == nil {
		return ""
	}
	return a.String()
}

// guardedOp is a delayed operation that runs handler code (building a
// response) on whatever goroutine completes it: a replication callback, a
// timer. It recovers a panic there as dispatch does (log, count, close
// only this connection), and once the request's connection is dropped it
// completes without doing anything, so the purgatory lets go of it.
type guardedOp struct {
	op purgatory.Operation
	rc *RequestContext
}

func (g *guardedOp) TryComplete() (done bool) {
	if g.rc.conn.dropped() {
		return true
	}
	defer func() {
		if r := recover(); r != nil {
			g.rc.CloseConnection(g.rc.conn.srv.recovered(g.rc, r))
			done = true
		}
	}()
	return g.op.TryComplete()
}

func (g *guardedOp) OnExpire() {
	if g.rc.conn.dropped() {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			g.rc.CloseConnection(g.rc.conn.srv.recovered(g.rc, r))
		}
	}()
	g.op.OnExpire()
}
