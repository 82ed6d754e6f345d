package cluster

import (
	"context"
	"github.com/kbroker/kbroker/internal/testutil"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/purgatory"
	"github.com/kbroker/kbroker/replication"
)

// panickyOp is a delayed operation whose completion panics once armed.
type panickyOp struct{ armed atomic.Bool }

func (o *panickyOp) TryComplete() bool {
	if o.armed.Load() {
		panic("delayed completion broke")
	}
	return false
}
func (o *panickyOp) OnExpire() {}

// A panic in a handler, or in a delayed operation completing on another
// goroutine, is recovered, counted, and closes only its connection.
func TestHandlerPanicClosesOnlyItsConnection(t *testing.T) {
	waiters := purgatory.New[replication.TopicPartition]("test")
	key := replication.TopicPartition{Topic: "t"}
	op := &panickyOp{}
	ts := startServer(t, testServerConfig(), nil,
		// Test-only rows on keys the broker does not serve.
		api{key: 17, min: 0, max: 1, handle: func(context.Context, *RequestContext, kmsg.Request) (kmsg.Response, error) {
			panic("handler broke")
		}},
		api{key: 36, min: 0, max: 2, handle: func(_ context.Context, rc *RequestContext, _ kmsg.Request) (kmsg.Response, error) {
			park(waiters, rc, op, time.Now().Add(time.Minute), []replication.TopicPartition{key}, true)
			return nil, nil
		}},
	)
	panics := func(api string) float64 { return metricValue(t, ts.metrics.panics.WithLabelValues(api)) }
	other := dialRaw(t, ts.addr)
	apiVersionsOK(t, other)

	c := dialRaw(t, ts.addr)
	apiVersionsOK(t, c)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version = 1
	hs.Mechanism = "PLAIN"
	c.send(hs)
	c.expectClosed()
	if got := panics("SASLHandshake"); got != 1 {
		t.Errorf("kbroker_request_panics_total{api=SASLHandshake} = %v, want 1", got)
	}
	apiVersionsOK(t, other)

	// The delayed completion runs on this test's goroutine, as it would on
	// a replication callback: the panic must not escape Check.
	d := dialRaw(t, ts.addr)
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.Version = 2
	d.send(auth)
	testutil.Eventually(t, 5*time.Second, func() bool { return waiters.Len() == 1 }, "the request to park")
	op.armed.Store(true)
	waiters.Check(key)
	d.expectClosed()
	if got := panics("SASLAuthenticate"); got != 1 {
		t.Errorf("kbroker_request_panics_total{api=SASLAuthenticate} = %v, want 1", got)
	}
	if waiters.Len() != 0 {
		t.Errorf("%d operations still waiting after the panic", waiters.Len())
	}
	apiVersionsOK(t, other)
}
