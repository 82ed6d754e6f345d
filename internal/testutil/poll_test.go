package testutil

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

// fakeTB records Fatalf instead of stopping the test.
type fakeTB struct{ fatal string }

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	if f.fatal == "" {
		f.fatal = fmt.Sprintf(format, args...)
	}
}

func TestPoll(t *testing.T) {
	errBusy := errors.New("busy")
	tests := []struct {
		name    string
		timeout time.Duration
		cond    func(n int) error
		wantErr []string // substrings; nil: success
		maxN    int      // the condition ran at most this often
	}{
		{"holds at once", time.Second, func(int) error { return nil }, nil, 1},
		{"holds on the third try", time.Second, func(n int) error {
			if n < 3 {
				return fmt.Errorf("try %d", n)
			}
			return nil
		}, nil, 3},
		{"times out with the last state", 50 * time.Millisecond, func(n int) error { return fmt.Errorf("%w: queue at %d", errBusy, n) },
			[]string{"not within 50ms", "busy: queue at"}, 1000},
		{"permanent stops at once", time.Minute, func(int) error { return Permanent(errors.New("process exited")) },
			[]string{"gave up after", "process exited"}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			err := Poll(context.Background(), tc.timeout, func() error { n++; return tc.cond(n) })
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("Poll: %v", err)
				}
			} else {
				if err == nil {
					t.Fatal("Poll succeeded")
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
			}
			if n > tc.maxN {
				t.Errorf("condition ran %d times, want at most %d", n, tc.maxN)
			}
		})
	}
	t.Run("wraps the last error", func(t *testing.T) {
		err := Poll(context.Background(), 10*time.Millisecond, func() error { return errBusy })
		if !errors.Is(err, errBusy) {
			t.Errorf("errors.Is(%v, errBusy) = false", err)
		}
	})
	t.Run("honours ctx", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		began := time.Now()
		err := Poll(ctx, time.Minute, func() bool { return false })
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(began) > 30*time.Second {
			t.Errorf("Poll after ctx ended: %v after %v", err, time.Since(began))
		}
	})
}

func TestEventually(t *testing.T) {
	var ok fakeTB
	n := 0
	Eventually(&ok, time.Second, func() bool { n++; return n == 2 }, "second call")
	if ok.fatal != "" {
		t.Errorf("failed although the condition held: %s", ok.fatal)
	}
	var bad fakeTB
	Eventually(&bad, 20*time.Millisecond, func() error { return errors.New("leader -1") }, "partition %d led", 3)
	for _, w := range []string{"partition 3 led", "not within 20ms", "leader -1"} {
		if !strings.Contains(bad.fatal, w) {
			t.Errorf("failure %q lacks %q", bad.fatal, w)
		}
	}
	var boolBad fakeTB
	Eventually(&boolBad, 10*time.Millisecond, func() bool { return false }, "never")
	if !strings.Contains(boolBad.fatal, "never: not within 10ms; last: condition still false") {
		t.Errorf("failure %q", boolBad.fatal)
	}
}

func TestCheckFor(t *testing.T) {
	var ok fakeTB
	CheckFor(&ok, 30*time.Millisecond, func() bool { return true }, "steady")
	if ok.fatal != "" {
		t.Errorf("failed although the condition held: %s", ok.fatal)
	}
	var bad fakeTB
	n := 0
	began := time.Now()
	CheckFor(&bad, time.Minute, func() error {
		if n++; n == 3 {
			return errors.New("expired 1")
		}
		return nil
	}, "nothing expires")
	if !strings.Contains(bad.fatal, "nothing expires: broke after") || !strings.Contains(bad.fatal, "expired 1") {
		t.Errorf("failure %q", bad.fatal)
	}
	if time.Since(began) > 30*time.Second {
		t.Errorf("CheckFor went on after the condition broke")
	}
}

func TestReservePorts(t *testing.T) {
	p, err := ReservePorts(5)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for i := range 5 {
		if seen[p.Port(i)] {
			t.Errorf("port %d handed out twice", p.Port(i))
		}
		seen[p.Port(i)] = true
		// Held: nobody else can bind it, and the failure is recognised.
		if l, err := net.Listen("tcp", p.Addr(i)); err == nil {
			l.Close()
			t.Errorf("%s bindable while reserved", p.Addr(i))
		} else if !AddrInUse(err, "") {
			t.Errorf("AddrInUse(%v) = false", err)
		}
	}
	for i := range 2 { // the second call finds nothing left to release
		if err := p.Release(); err != nil {
			t.Fatalf("Release #%d: %v", i+1, err)
		}
	}
	l, err := net.Listen("tcp", p.Addr(0))
	if err != nil {
		t.Fatalf("%s not bindable after Release: %v", p.Addr(0), err)
	}
	l.Close()
	if !AddrInUse(nil, "listen tcp 127.0.0.1:1: bind: address already in use") || AddrInUse(errors.New("refused"), "ok") {
		t.Error("AddrInUse misreads log text or errors")
	}
}

func TestListen(t *testing.T) {
	l := Listen(t)
	go func() {
		if c, err := l.Accept(); err == nil {
			c.Close()
		}
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}
