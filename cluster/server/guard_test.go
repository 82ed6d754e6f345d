package server

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/kafkatest"
	"github.com/kbroker/kbroker/internal/testutil"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/purgatory"
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
	waiters := purgatory.New[string]("test")
	key := "t"
	op := &panickyOp{}
	ts := startServer(t, testServerConfig(), nil,
		// Test-only rows on keys the broker does not serve (not the SASL
		// keys: those are served only on SASL listeners).
		API{Key: 61, Min: 0, Max: 0, Handle: func(context.Context, *RequestContext, kmsg.Request) (kmsg.Response, error) {
			panic("handler broke")
		}},
		API{Key: 57, Min: 0, Max: 1, Handle: func(_ context.Context, rc *RequestContext, _ kmsg.Request) (kmsg.Response, error) {
			Park(waiters, rc, op, time.Now().Add(time.Minute), []string{key}, true)
			return nil, nil
		}},
	)
	panics := func(api string) float64 { return metricValue(t, ts.metrics.panics.WithLabelValues(api)) }
	other := kafkatest.Dial(t, ts.addr)
	kafkatest.APIVersionsOK(t, other)

	c := kafkatest.Dial(t, ts.addr)
	kafkatest.APIVersionsOK(t, c)
	c.Send(kmsg.NewPtrDescribeProducersRequest())
	c.ExpectClosed()
	if got := panics("DescribeProducers"); got != 1 {
		t.Errorf("kbroker_request_panics_total{api=DescribeProducers} = %v, want 1", got)
	}
	kafkatest.APIVersionsOK(t, other)

	// The delayed completion runs on this test's goroutine, as it would on
	// a replication callback: the panic must not escape Check.
	d := kafkatest.Dial(t, ts.addr)
	uf := kmsg.NewPtrUpdateFeaturesRequest()
	uf.Version = 1
	d.Send(uf)
	testutil.Eventually(t, 5*time.Second, func() bool { return waiters.Len() == 1 }, "the request to park")
	op.armed.Store(true)
	waiters.Check(key)
	d.ExpectClosed()
	if got := panics("UpdateFeatures"); got != 1 {
		t.Errorf("kbroker_request_panics_total{api=UpdateFeatures} = %v, want 1", got)
	}
	if waiters.Len() != 0 {
		t.Errorf("%d operations still waiting after the panic", waiters.Len())
	}
	kafkatest.APIVersionsOK(t, other)
}
