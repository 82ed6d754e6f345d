package itest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ackTimes measures the outage around a kill from acknowledgement times.
type ackTimes struct {
	mu         sync.Mutex
	killedAt   time.Time
	lastAck    time.Time
	maxGap     time.Duration // longest time without an acknowledgement
	firstAfter time.Time     // first ack of a record handed over after the kill
}

func (a *ackTimes) ack(sentAt, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.lastAck.IsZero() && now.Sub(a.lastAck) > a.maxGap {
		a.maxGap = now.Sub(a.lastAck)
	}
	a.lastAck = now
	if !a.killedAt.IsZero() && a.firstAfter.IsZero() && sentAt.After(a.killedAt) {
		a.firstAfter = now
	}
}

func (a *ackTimes) kill(now time.Time) {
	a.mu.Lock()
	a.killedAt = now
	a.mu.Unlock()
}

// TestFranzKill9MidProduce produces continuously with franz-go's defaults
// (idempotent, acks=all) to a 3-partition topic at a steady rate, SIGKILLs
// the broker right after a third of the records are handed over (so some
// are in flight), restarts it while the producer keeps going, and checks
// that every acknowledged record survived at its offset, exactly once.
func TestFranzKill9MidProduce(t *testing.T) {
	total := pick(4000, 20000)
	const (
		produceFor = 6 * time.Second // spread the records over this long
		tick       = 10 * time.Millisecond
	)
	perTick := total / int(produceFor/tick)

	b := startBroker(t, t.TempDir())
	topic := topicName(t)
	createTopic(t, b, topic, 3, nil)

	a := newAcks()
	var times ackTimes
	third := make(chan struct{}) // closed once a third is handed over
	var thirdOnce sync.Once

	cl := newClient(t, b) // defaults: idempotent, acks=all, unlimited retries
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	var handed atomic.Int64 // records given to the client
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		ticker := time.NewTicker(tick)
		defer ticker.Stop()
		for i := 0; i < total && ctx.Err() == nil; {
			for j := 0; j < perTick && i < total; j, i = j+1, i+1 {
				v := fmt.Sprintf("r-%06d", i)
				sentAt := time.Now()
				handed.Add(1)
				cl.Produce(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}, func(r *kgo.Record, err error) {
					if err != nil {
						a.Fail()
						return
					}
					times.ack(sentAt, time.Now())
					a.Ack(r.Partition, r.Offset, v)
				})
			}
			if i >= total/3 {
				// Kill right after handing over a batch, so that
				// records are in flight when the broker dies.
				thirdOnce.Do(func() { close(third) })
			}
			select {
			case <-ticker.C:
			case <-ctx.Done():
			}
		}
	}()

	select {
	case <-third:
	case <-ctx.Done():
		t.Fatalf("only %d of %d records handed to the client before the kill deadline", handed.Load(), total)
	}
	ackedAtKill := a.Count()
	inFlight := handed.Load() - int64(ackedAtKill)
	killedAt := time.Now()
	times.kill(killedAt)
	b.kill9()
	b.restart()
	startup := time.Since(killedAt)

	<-produced
	if err := cl.Flush(ctx); err != nil {
		t.Fatalf("flush: %v (%d acknowledged, %d failed)", err, a.Count(), a.Failed())
	}
	times.mu.Lock()
	if times.firstAfter.IsZero() {
		t.Errorf("no record handed to the client after the kill was acknowledged")
	}
	t.Logf("SIGKILL sent with %d records acknowledged and %d handed to the client but not yet acknowledged; kill to ready (Metadata answers) %v; kill to first ack of a record sent after the kill %v; longest gap between acks %v",
		ackedAtKill, inFlight, startup.Round(time.Millisecond), times.firstAfter.Sub(killedAt).Round(time.Millisecond), times.maxGap.Round(time.Millisecond))
	times.mu.Unlock()

	got := consumeAll(t, b, topic)
	checkLog(t, a, got)
	if a.Failed() == 0 && a.Count() != total {
		t.Errorf("%d records acknowledged, want %d", a.Count(), total)
	}
	want := make([]string, total)
	for i := range want {
		want[i] = fmt.Sprintf("r-%06d", i)
	}
	checkValuesOnce(t, want, got) // idempotence: no duplicates despite retries
}

// TestFranzCleanStopRestart stops the broker with SIGTERM (it must exit
// 0), restarts it, checks every acknowledged record, then appends more with
// the same idempotent producer and checks the offsets continue.
func TestFranzCleanStopRestart(t *testing.T) {
	t.Parallel()
	n := pick(500, 2000)
	b := startBroker(t, t.TempDir())
	topic := topicName(t)
	createTopic(t, b, topic, 3, nil)
	a := newAcks()

	// One idempotent producer across the restart: its sequence numbers
	// continue, so the broker must have kept its producer state.
	cl := newClient(t, b)
	produce := func(from, to int) {
		t.Helper()
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
					a.Fail()
					return
				}
				a.Ack(r.Partition, r.Offset, v)
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
	if a.Count() != 2*n {
		t.Errorf("%d acknowledged, want %d", a.Count(), 2*n)
	}
}
