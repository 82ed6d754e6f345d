package server

import (
	"context"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/kafkatest"
	"github.com/kbroker/kbroker/internal/testutil"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/purgatory"
)

// stuckOp is a delayed produce that can only expire: its high watermark
// never comes. On expiry it answers with the request's response.
type stuckOp struct {
	rc   *RequestContext
	resp kmsg.Response
}

func (o *stuckOp) TryComplete() bool { return false }
func (o *stuckOp) OnExpire()         { o.rc.Respond(o.resp) }

// parkingAPI is a Produce row that parks every acks=all request in
// waiters (a fresh purgatory when nil) until its timeout, as a produce
// whose followers never catch up would. keepsRequest is passed to park.
func parkingAPI(waiters *purgatory.Purgatory[string], keepsRequest bool) API {
	if waiters == nil {
		waiters = purgatory.New[string]("test")
	}
	return API{Key: 0, Min: 3, Max: 11, Handle: func(_ context.Context, rc *RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
		req := kreq.(*kmsg.ProduceRequest)
		op := &stuckOp{rc: rc, resp: req.ResponseKind()}
		deadline := time.Now().Add(time.Duration(req.TimeoutMillis) * time.Millisecond)
		Park(waiters, rc, op, deadline, []string{"t"}, keepsRequest)
		return nil, nil
	}}
}

// When a client disconnects, its parked acks=all produce leaves the
// purgatory, its request memory is given back and the server closes the
// socket at once, without waiting for the produce's timeout.
func TestPeerCloseDropsParkedRequests(t *testing.T) {
	waiters := purgatory.New[string]("produce")
	cfg := testServerConfig()
	cfg.queuedMaxRequestBytes = 1 << 20
	ts := startServer(t, cfg, nil, parkingAPI(waiters, true))
	queued := func() float64 { return metricValue(t, ts.metrics.queuedBytes) }

	c := kafkatest.Dial(t, ts.addr)
	req := kafkatest.ProduceRequest(9, -1, "t", map[int32][]byte{0: nil})
	req.TimeoutMillis = 60_000
	c.Send(req)
	c.Send(req) // a second one queued behind it
	testutil.Eventually(t, 5*time.Second, func() bool { return waiters.Len() == 2 }, "both produces to park")
	if queued() == 0 {
		t.Fatal("parked requests hold no request memory")
	}

	if n := ts.limits.open(); n != 1 {
		t.Fatalf("%d connections open, want 1", n)
	}
	c.NC.Close()
	start := time.Now()
	testutil.Eventually(t, 5*time.Second, func() bool { return ts.limits.open() == 0 }, "the server to close the socket")
	testutil.Eventually(t, 5*time.Second, func() bool { return waiters.Len() == 0 }, "the parked produces to leave the purgatory (len %d)", waiters.Len())
	t.Logf("socket closed and purgatory emptied %v after the client left", time.Since(start))
	if got := queued(); got != 0 {
		t.Errorf("%v request bytes still queued", got)
	}

	// A client that stays gets its answer at the timeout.
	stay := kafkatest.Dial(t, ts.addr)
	req.TimeoutMillis = 100
	stay.RoundTrip(req)
	// The purgatory counts the operation until OnExpire, which sent the
	// response, has returned.
	testutil.Eventually(t, 5*time.Second, func() bool { return waiters.Len() == 0 }, "the expired produce to leave the purgatory")
}
