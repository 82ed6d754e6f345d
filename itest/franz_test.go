package itest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ackTimes remembers when acknowledgements arrived relative to a kill.
type ackTimes struct {
	mu              sync.Mutex
	killedAt        time.Time
	lastBeforeKill  time.Time
	firstAfterStart time.Time
}

func (a *ackTimes) ack(now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.killedAt.IsZero():
		a.lastBeforeKill = now
	case a.firstAfterStart.IsZero() && now.After(a.killedAt):
		a.firstAfterStart = now
	}
}

// TestFranzKill9MidProduce produces continuously with franz-go's defaults
// (idempotent, acks=all) to a 3-partition topic, SIGKILLs the broker once
// a third of the records are acknowledged, restarts it, and checks that
// every acknowledged record survived at its offset.
func TestFranzKill9MidProduce(t *testing.T) {
	total := pick(4000, 20000)
	b := startBroker(t, t.TempDir())
	topic := topicName(t)
	createTopic(t, b, topic, 3, nil)

	a := newAcks()
	var times ackTimes
	third := make(chan struct{})
	var thirdOnce sync.Once

	cl := newClient(t, b) // defaults: idempotent, acks=all, unlimited retries
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	produced := make(chan struct{})
	go func() {
		defer close(produced)
		for i := 0; i < total && ctx.Err() == nil; i++ {
			v := fmt.Sprintf("r-%06d", i)
			cl.Produce(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}, func(r *kgo.Record, err error) {
				if err != nil {
					a.fail()
					return
				}
				times.ack(time.Now())
				a.ack(r.Partition, r.Offset, v)
				if a.count() >= total/3 {
					thirdOnce.Do(func() { close(third) })
				}
			})
		}
	}()

	select {
	case <-third:
	case <-ctx.Done():
		t.Fatalf("only %d of %d records acknowledged before the kill deadline", a.count(), total)
	}
	times.mu.Lock()
	times.killedAt = time.Now()
	times.mu.Unlock()
	b.kill9()
	ackedAtKill := a.count()
	down := time.Now()
	b.restart()
	startup := time.Since(down)

	<-produced
	if err := cl.Flush(ctx); err != nil {
		t.Fatalf("flush: %v (%d acknowledged, %d failed)", err, a.count(), a.failed)
	}
	times.mu.Lock()
	unavailable := times.firstAfterStart.Sub(times.lastBeforeKill)
	if times.firstAfterStart.IsZero() {
		t.Errorf("no record was acknowledged after the restart")
	}
	times.mu.Unlock()
	t.Logf("kill -9 after %d acks; restart took %v; no acknowledgement for %v (last ack before kill to first ack after restart)",
		ackedAtKill, startup.Round(time.Millisecond), unavailable.Round(time.Millisecond))

	got := consumeAll(t, b, topic)
	checkLog(t, a, got)
	if a.failed == 0 && a.count() != total {
		t.Errorf("%d records acknowledged, want %d", a.count(), total)
	}
	want := make([]string, total)
	for i := range want {
		want[i] = fmt.Sprintf("r-%06d", i)
	}
	checkValuesOnce(t, want, got) // idempotence: no duplicates despite retries
}

// TestFranzCleanStopRestart stops the broker with SIGTERM (it must exit
// 0), restarts it, checks every acknowledged record, then appends more and
// checks the offsets continue.
func TestFranzCleanStopRestart(t *testing.T) {
	t.Parallel()
	n := pick(500, 2000)
	b := startBroker(t, t.TempDir())
	topic := topicName(t)
	createTopic(t, b, topic, 3, nil)
	a := newAcks()

	produce := func(from, to int) {
		t.Helper()
		cl := newClient(t, b)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var wg sync.WaitGroup
		for i := from; i < to; i++ {
			v := fmt.Sprintf("s-%06d", i)
			wg.Add(1)
			cl.Produce(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}, func(r *kgo.Record, err error) {
				defer wg.Done()
				if err != nil {
					t.Errorf("produce %s: %v", v, err)
					a.fail()
					return
				}
				a.ack(r.Partition, r.Offset, v)
			})
		}
		wg.Wait()
	}

	produce(0, n)
	b.stop()
	b.restart()
	checkLog(t, a, consumeAll(t, b, topic))
	produce(n, 2*n)
	checkLog(t, a, consumeAll(t, b, topic))
	if a.count() != 2*n {
		t.Errorf("%d acknowledged, want %d", a.count(), 2*n)
	}
}
