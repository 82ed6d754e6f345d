package testutil

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// TB is the part of testing.TB the helpers need.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Cond is a polled condition: a func() bool, or a func() error that
// returns nil once the condition holds and otherwise an error describing
// the state it saw (the failure message quotes the last one).
type Cond interface {
	func() bool | func() error
}

// Polling starts fast (tests of in-process state usually settle within
// milliseconds) and backs off to maxInterval so that conditions which ask
// a broker over the network do not flood it.
const (
	firstInterval = 2 * time.Millisecond
	maxInterval   = 100 * time.Millisecond
)

// errFalse is the state of a func() bool condition that did not hold.
var errFalse = errors.New("condition still false")

func eval[C Cond](cond C) error {
	switch c := any(cond).(type) {
	case func() bool:
		if c() {
			return nil
		}
		return errFalse
	case func() error:
		return c()
	}
	panic("unreachable: Cond is func() bool or func() error")
}

// Permanent wraps err, returned by a condition, to stop the polling at
// once: the state can no longer change (a process exited, say).
func Permanent(err error) error { return permanentError{err} }

type permanentError struct{ err error }

func (p permanentError) Error() string { return p.err.Error() }
func (p permanentError) Unwrap() error { return p.err }

// Poll evaluates cond until it holds, timeout passes, ctx ends or cond
// returns a Permanent error. It returns nil when cond held, otherwise an
// error that says how long it waited and wraps cond's last error (or
// ctx's).
func Poll[C Cond](ctx context.Context, timeout time.Duration, cond C) error {
	began := time.Now()
	deadline := began.Add(timeout)
	interval := firstInterval
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		last := eval(cond)
		if last == nil {
			return nil
		}
		var perm permanentError
		if errors.As(last, &perm) {
			return fmt.Errorf("gave up after %v: %w", time.Since(began).Round(time.Millisecond), perm.err)
		}
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("not within %v; last: %w", timeout, last)
		}
		timer.Reset(min(interval, left))
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w while waiting; last: %w", ctx.Err(), last)
		case <-timer.C:
		}
		interval = min(2*interval, maxInterval)
	}
}

// Eventually polls cond until it holds and fails the test when it does not
// within timeout. The message is format/args followed by cond's last
// observed state.
func Eventually[C Cond](t TB, timeout time.Duration, cond C, format string, args ...any) {
	t.Helper()
	if err := Poll(context.Background(), timeout, cond); err != nil {
		t.Fatalf("%s: %v", fmt.Sprintf(format, args...), err)
	}
}

// CheckFor polls cond for the whole of d and fails the test the first time
// it does not hold, quoting the state it saw: "nothing happens for d",
// without a bare sleep that would miss a transient violation.
func CheckFor[C Cond](t TB, d time.Duration, cond C, format string, args ...any) {
	t.Helper()
	began := time.Now()
	deadline := began.Add(d)
	interval := firstInterval
	for {
		if err := eval(cond); err != nil {
			t.Fatalf("%s: broke after %v of %v: %v", fmt.Sprintf(format, args...), time.Since(began).Round(time.Millisecond), d, err)
			return
		}
		left := time.Until(deadline)
		if left <= 0 {
			return
		}
		time.Sleep(min(interval, left))
		interval = min(2*interval, maxInterval)
	}
}
