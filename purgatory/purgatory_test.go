package purgatory

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/testutil"
)

// testOp completes when ready is set. It records how often each method ran
// and catches TryComplete running concurrently with itself or after the
// operation ended.
type testOp struct {
	t         testing.TB
	ready     atomic.Bool
	tries     atomic.Int64
	completed atomic.Int64
	expired   atomic.Int64
	inTry     atomic.Int32
	// onTry, if set, runs inside TryComplete after ready is read: a change
	// it makes is seen by the next TryComplete, not this one.
	onTry func()
}

func (o *testOp) TryComplete() bool {
	if o.inTry.Add(1) != 1 {
		o.t.Errorf("TryComplete ran concurrently for one operation")
	}
	defer o.inTry.Add(-1)
	if o.completed.Load() != 0 || o.expired.Load() != 0 {
		o.t.Errorf("TryComplete called after the operation ended")
	}
	o.tries.Add(1)
	ready := o.ready.Load()
	if o.onTry != nil {
		o.onTry()
	}
	if ready {
		o.completed.Add(1)
		return true
	}
	return false
}

func (o *testOp) OnExpire() {
	if o.completed.Load() != 0 {
		o.t.Errorf("OnExpire after TryComplete returned true")
	}
	o.expired.Add(1)
}

func (o *testOp) ended() int64 { return o.completed.Load() + o.expired.Load() }

// endedOnce is a condition: op completed and expired exactly so often.
func (o *testOp) endedOnce(completed, expired int64) func() error {
	return func() error {
		if c, e := o.completed.Load(), o.expired.Load(); c != completed || e != expired {
			return fmt.Errorf("completed %d expired %d", c, e)
		}
		return nil
	}
}

const never = time.Hour

func assertEmpty[K comparable](t testing.TB, p *Purgatory[K]) {
	t.Helper()
	if n := p.Len(); n != 0 {
		t.Errorf("Len = %d, want 0", n)
	}
	if keys, nodes := p.watchedKeys(); keys != 0 || nodes != 0 {
		t.Errorf("watchers left: %d keys, %d nodes", keys, nodes)
	}
}

func TestCompleteOnAdd(t *testing.T) {
	p := New[string]("test")
	op := &testOp{t: t}
	op.ready.Store(true)
	if !p.TryCompleteElseWatch(op, time.Now().Add(never), "a") {
		t.Fatal("not completed on add")
	}
	if op.tries.Load() != 1 || op.completed.Load() != 1 {
		t.Errorf("tries %d completed %d", op.tries.Load(), op.completed.Load())
	}
	assertEmpty(t, p)
}

func TestCompleteOnCheck(t *testing.T) {
	p := New[int]("test")
	op := &testOp{t: t}
	if p.TryCompleteElseWatch(op, time.Now().Add(50*time.Millisecond), 1) {
		t.Fatal("completed on add")
	}
	if op.tries.Load() != 2 {
		t.Errorf("tries = %d, want 2 (before and after watching)", op.tries.Load())
	}
	if p.Len() != 1 {
		t.Fatalf("Len = %d, want 1", p.Len())
	}
	if n := p.Check(2); n != 0 {
		t.Errorf("Check(other key) = %d", n)
	}
	if n := p.Check(1); n != 0 {
		t.Errorf("Check before ready = %d", n)
	}
	op.ready.Store(true)
	if n := p.Check(1); n != 1 {
		t.Fatalf("Check = %d, want 1", n)
	}
	assertEmpty(t, p)
	if n := p.Check(1); n != 0 {
		t.Errorf("second Check = %d", n)
	}
	// The timer was stopped: nothing expires after the deadline.
	testutil.CheckFor(t, 100*time.Millisecond, op.endedOnce(1, 0), "completed once, never expired")
}

func TestExpiry(t *testing.T) {
	p := New[string]("test")
	op := &testOp{t: t}
	p.TryCompleteElseWatch(op, time.Now().Add(10*time.Millisecond), "a", "b")
	testutil.Eventually(t, 10*time.Second, func() bool { return op.expired.Load() == 1 }, "expiry")
	assertEmpty(t, p)
	op.ready.Store(true)
	if n := p.Check("a") + p.Check("b"); n != 0 {
		t.Errorf("Check after expiry completed %d", n)
	}
	testutil.CheckFor(t, 20*time.Millisecond, op.endedOnce(0, 1), "expired once, never completed")
}

func TestPastDeadlineExpires(t *testing.T) {
	p := New[string]("test")
	op := &testOp{t: t}
	p.TryCompleteElseWatch(op, time.Now().Add(-time.Second), "a")
	testutil.Eventually(t, 10*time.Second, func() bool { return op.expired.Load() == 1 }, "expiry")
	assertEmpty(t, p)
}

func TestThreeKeysCompleteOnce(t *testing.T) {
	p := New[string]("test")
	op := &testOp{t: t}
	p.TryCompleteElseWatch(op, time.Now().Add(never), "a", "b", "c")
	if keys, nodes := p.watchedKeys(); keys != 3 || nodes != 3 {
		t.Fatalf("watching %d keys, %d nodes; want 3, 3", keys, nodes)
	}
	op.ready.Store(true)
	if n := p.Check("b"); n != 1 {
		t.Fatalf("Check(b) = %d", n)
	}
	if n := p.Check("a") + p.Check("c") + p.Check("b"); n != 0 {
		t.Errorf("other Checks completed %d", n)
	}
	if op.completed.Load() != 1 || op.tries.Load() != 3 {
		t.Errorf("completed %d tries %d", op.completed.Load(), op.tries.Load())
	}
	assertEmpty(t, p)
}

// An op whose condition changes between the first TryComplete and the
// watch completes on the try after watching.
func TestRaceBeforeWatch(t *testing.T) {
	p := New[string]("test")
	op := &testOp{t: t}
	op.onTry = func() { op.ready.Store(true) } // the first try fails, then the state changes
	if !p.TryCompleteElseWatch(op, time.Now().Add(never), "a") {
		t.Fatal("not completed by the try after watching")
	}
	if op.tries.Load() != 2 || op.completed.Load() != 1 {
		t.Errorf("tries %d completed %d", op.tries.Load(), op.completed.Load())
	}
	assertEmpty(t, p)
}

// A Check that finds TryComplete running elsewhere makes it run again, so
// the change it announces is not lost.
func TestCheckDuringTryComplete(t *testing.T) {
	p := New[string]("test")
	op := &testOp{t: t}
	p.TryCompleteElseWatch(op, time.Now().Add(never), "a")
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	op.onTry = func() {
		once.Do(func() {
			close(entered)
			<-release // this try has read "not ready" already
		})
	}
	result := make(chan int)
	go func() { result <- p.Check("a") }()
	<-entered
	// While the first Check is inside TryComplete, the state changes and a
	// second Check runs: it must not block and must not be lost.
	op.ready.Store(true)
	if n := p.Check("a"); n != 0 {
		t.Errorf("concurrent Check = %d, want 0 (it hands over)", n)
	}
	close(release)
	if n := <-result; n != 1 {
		t.Fatalf("first Check = %d, want 1", n)
	}
	if op.completed.Load() != 1 {
		t.Errorf("completed %d", op.completed.Load())
	}
	assertEmpty(t, p)
}

// TryComplete may Check its own key without deadlock.
func TestReentrantCheck(t *testing.T) {
	p := New[string]("test")
	op := &testOp{t: t}
	p.TryCompleteElseWatch(op, time.Now().Add(never), "a")
	depth := 0
	op.onTry = func() {
		if depth == 0 {
			depth++
			p.Check("a")
			depth--
		}
	}
	op.ready.Store(true)
	done := make(chan int)
	go func() { done <- p.Check("a") }()
	select {
	case n := <-done:
		if n != 1 {
			t.Errorf("Check = %d", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("deadlock")
	}
	assertEmpty(t, p)
}

func TestClose(t *testing.T) {
	p := New[int]("test")
	ops := make([]*testOp, 100)
	for i := range ops {
		ops[i] = &testOp{t: t}
		p.TryCompleteElseWatch(ops[i], time.Now().Add(never), i%7, i%3+100)
	}
	p.Close()
	for i, op := range ops {
		if op.expired.Load() != 1 || op.completed.Load() != 0 {
			t.Fatalf("op %d: completed %d expired %d", i, op.completed.Load(), op.expired.Load())
		}
	}
	assertEmpty(t, p)
	// Later adds expire at once unless they complete at once.
	late := &testOp{t: t}
	if p.TryCompleteElseWatch(late, time.Now().Add(never), 1) {
		t.Fatal("late op completed")
	}
	if late.expired.Load() != 1 {
		t.Errorf("late op not expired")
	}
	ready := &testOp{t: t}
	ready.ready.Store(true)
	if !p.TryCompleteElseWatch(ready, time.Now().Add(never), 1) {
		t.Errorf("ready late op did not complete")
	}
	p.Close() // idempotent
	assertEmpty(t, p)
}

func TestNoKeysPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	New[int]("test").TryCompleteElseWatch(&testOp{t: t}, time.Now(), []int{}...)
}

func TestManyCompleteNoLeak(t *testing.T) {
	p := New[int]("test")
	const n = 10000
	ops := make([]*testOp, n)
	for i := range ops {
		ops[i] = &testOp{t: t}
		p.TryCompleteElseWatch(ops[i], time.Now().Add(never), i%100, i%37+1000, i)
	}
	if p.Len() != n {
		t.Fatalf("Len = %d", p.Len())
	}
	for _, op := range ops {
		op.ready.Store(true)
	}
	total := 0
	for k := 0; k < 100; k++ {
		total += p.Check(k)
	}
	if total != n {
		t.Errorf("completed %d, want %d", total, n)
	}
	for i, op := range ops {
		if op.completed.Load() != 1 || op.expired.Load() != 0 {
			t.Fatalf("op %d: completed %d expired %d", i, op.completed.Load(), op.expired.Load())
		}
	}
	assertEmpty(t, p)
}

func TestManyExpire(t *testing.T) {
	p := New[int]("test")
	const n = 10000
	ops := make([]*testOp, n)
	deadline := time.Now().Add(50 * time.Millisecond)
	for i := range ops {
		ops[i] = &testOp{t: t}
		p.TryCompleteElseWatch(ops[i], deadline, i%100, i)
	}
	testutil.Eventually(t, 10*time.Second, func() bool { return p.Len() == 0 }, "all expired")
	for i, op := range ops {
		if op.expired.Load() != 1 || op.completed.Load() != 0 {
			t.Fatalf("op %d: completed %d expired %d", i, op.completed.Load(), op.expired.Load())
		}
	}
	assertEmpty(t, p)
}

// Many goroutines add, check and close at once; every op ends exactly once.
// Run with -race.
func TestConcurrent(t *testing.T) {
	p := New[int]("test")
	const (
		adders    = 8
		perAdder  = 2000
		checkers  = 4
		keySpace  = 16
		closeHalf = adders * perAdder / 2
	)
	ops := make([]*testOp, adders*perAdder)
	for i := range ops {
		ops[i] = &testOp{t: t}
	}
	var added atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for c := 0; c < checkers; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(c), 1))
			for {
				select {
				case <-stop:
					return
				default:
				}
				// Make some ops ready, then check a key.
				for j := 0; j < 4; j++ {
					ops[r.IntN(len(ops))].ready.Store(true)
				}
				p.Check(r.IntN(keySpace))
			}
		}()
	}
	var adderWG sync.WaitGroup
	for a := 0; a < adders; a++ {
		adderWG.Add(1)
		go func() {
			defer adderWG.Done()
			r := rand.New(rand.NewPCG(uint64(a), 2))
			for i := 0; i < perAdder; i++ {
				op := ops[a*perAdder+i]
				if r.IntN(10) == 0 {
					op.ready.Store(true)
				}
				d := time.Duration(r.IntN(5000)) * time.Microsecond
				k1, k2 := r.IntN(keySpace), r.IntN(keySpace)
				p.TryCompleteElseWatch(op, time.Now().Add(d), k1, k2)
				if added.Add(1) == closeHalf {
					// Close while others are still adding and checking.
					go p.Close()
				}
			}
		}()
	}
	adderWG.Wait()
	p.Close() // expire whatever the racing Close missed
	close(stop)
	wg.Wait()
	var completed, expired int
	for i, op := range ops {
		if op.ended() != 1 {
			t.Fatalf("op %d: completed %d expired %d", i, op.completed.Load(), op.expired.Load())
		}
		completed += int(op.completed.Load())
		expired += int(op.expired.Load())
	}
	t.Logf("completed %d, expired %d", completed, expired)
	assertEmpty(t, p)
}

// Without Close: ops complete or expire on their own.
func TestConcurrentNoClose(t *testing.T) {
	p := New[int]("test")
	const n = 8000
	ops := make([]*testOp, n)
	for i := range ops {
		ops[i] = &testOp{t: t}
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := g; i < n; i += 8 {
				p.TryCompleteElseWatch(ops[i], time.Now().Add(time.Duration(i%20)*time.Millisecond), i%10, (i+3)%10)
			}
		}()
		go func() {
			defer wg.Done()
			for i := g; i < n; i += 8 {
				if i%3 == 0 {
					ops[i].ready.Store(true)
				}
				p.Check(i % 10)
			}
		}()
	}
	wg.Wait()
	testutil.Eventually(t, 10*time.Second, func() bool { return p.Len() == 0 }, "all ended")
	for i, op := range ops {
		if op.ended() != 1 {
			t.Fatalf("op %d: completed %d expired %d", i, op.completed.Load(), op.expired.Load())
		}
	}
	assertEmpty(t, p)
}

// Checks counts every Check, of watched keys and of others alike, and
// nothing else: an operation comparing it before and after learns whether
// any key was checked meanwhile.
func TestChecksCountsEveryCheck(t *testing.T) {
	p := New[string]("test")
	defer p.Close()
	if n := p.Checks(); n != 0 {
		t.Fatalf("new purgatory: %d checks", n)
	}
	op := &testOp{t: t}
	p.TryCompleteElseWatch(op, time.Now().Add(time.Minute), "a")
	if n := p.Checks(); n != 0 {
		t.Fatalf("after watching: %d checks, want 0", n)
	}
	p.Check("a")
	p.Check("unwatched")
	if n := p.Checks(); n != 2 {
		t.Fatalf("after two checks: %d, want 2", n)
	}
}
