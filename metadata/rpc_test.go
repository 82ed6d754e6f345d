package metadata

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kbroker/kbroker/metadata/listener"
)

func TestErrorCodesRoundTrip(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range errorCodes {
		if seen[c.code] {
			t.Fatalf("code %s twice", c.code)
		}
		seen[c.code] = true
		err := fromWire(toWire(fmt.Errorf("op: %w", c.err)))
		if !errors.Is(err, c.err) || err.Error() != "op: "+c.err.Error() {
			t.Errorf("%s: got %v", c.code, err)
		}
		// Through a second hop (a list in a response) too.
		var l errorList
		b, _ := errorList{err, nil}.MarshalJSON()
		if e := l.UnmarshalJSON(b); e != nil || !errors.Is(l[0], c.err) || l[1] != nil {
			t.Errorf("%s in a list: %v %v", c.code, l, e)
		}
	}
	if err := fromWire(toWire(errors.New("boom"))); err.Error() != "boom" || errors.Is(err, ErrNotController) {
		t.Errorf("unknown error: %v", err)
	}
}

// TestListenerMux: an unknown preamble closes the connection; a garbage
// RPC frame closes it too; the store keeps serving.
func TestListenerMux(t *testing.T) {
	s := openReady(t, testConfig(t.TempDir()))
	addr := s.ln.Addr().String()
	for _, b := range [][]byte{{'X'}, {'C', 0xff, 0xff, 0xff, 0xff}} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write(b); err != nil {
			t.Fatalf("preamble %q: write: %v", b[0], err)
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Fatalf("preamble %q: read %v, want EOF", b[0], err)
		}
		c.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	raw, err := s.callRemote(ctx, addr, opReadIndex.name, []byte("{}"))
	if err != nil || len(raw) == 0 {
		t.Fatalf("ReadIndex over RPC: %s %v", raw, err)
	}
	if _, err := s.callRemote(ctx, addr, "Nope", []byte("{}")); err == nil {
		t.Fatal("unknown op accepted")
	}
}

// failingListener fails Accept with EMFILE while fail > 0, as a process out
// of file descriptors does.
type failingListener struct {
	net.Listener
	fail  atomic.Int32
	fails atomic.Int32 // Accept calls that failed
}

func (l *failingListener) Accept() (net.Conn, error) {
	if l.fail.Add(-1) >= 0 {
		l.fails.Add(1)
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.Addr(), Err: os.NewSyscallError("accept", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

// TestAcceptSurvivesEMFILE: a storm of EMFILE from Accept does not stop
// the controller listener; it serves the RPC again once descriptors are
// available.
func TestAcceptSurvivesEMFILE(t *testing.T) {
	var fl *failingListener
	cfg := testConfig(t.TempDir())
	cfg.wrapListener = func(ln net.Listener) net.Listener {
		fl = &failingListener{Listener: ln}
		return fl
	}
	s := openReady(t, cfg)
	addr := s.ln.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const storm = 8
	fl.fail.Store(storm)
	// Wake the accept loop: it is blocked in the real Accept until a
	// connection arrives; this one is accepted, the next Accepts fail.
	// A connection per call (listener.Dialer, not the Store's pool): the
	// second call needs an Accept after the storm.
	if _, err := remoteCall(ctx, listener.Dialer{}, addr, opReadIndex.name, []byte("{}")); err != nil {
		t.Fatalf("ReadIndex before the storm: %v", err)
	}
	raw, err := remoteCall(ctx, listener.Dialer{}, addr, opReadIndex.name, []byte("{}"))
	if err != nil || len(raw) == 0 {
		t.Fatalf("ReadIndex after the storm: %s %v", raw, err)
	}
	if got := fl.fails.Load(); got != storm {
		t.Fatalf("%d failed Accepts, want %d", got, storm)
	}
}
