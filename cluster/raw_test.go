package cluster

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawConn speaks the Kafka protocol by hand, so tests can send requests
// no well-behaved client would.
type rawConn struct {
	t    testing.TB
	nc   net.Conn
	corr int32
}

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc}
}

// send writes req with a request header and returns its correlation id.
func (c *rawConn) send(req kmsg.Request) int32 {
	c.t.Helper()
	c.corr++
	body := c.header(req.Key(), req.GetVersion(), req.IsFlexible())
	body = req.AppendTo(body)
	c.writeFrame(body)
	return c.corr
}

func (c *rawConn) header(key, version int16, flexible bool) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(c.corr))
	client := "raw-test"
	b = binary.BigEndian.AppendUint16(b, uint16(len(client)))
	b = append(b, client...)
	if flexible {
		b = append(b, 0) // no tagged fields
	}
	return b
}

func (c *rawConn) writeFrame(body []byte) {
	c.t.Helper()
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	frame = append(frame, body...)
	c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.nc.Write(frame); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// readFrame reads one response frame; io.EOF (or a reset) means the
// broker closed the connection.
func (c *rawConn) readFrame(timeout time.Duration) ([]byte, error) {
	c.nc.SetReadDeadline(time.Now().Add(timeout))
	var size [4]byte
	if _, err := io.ReadFull(c.nc, size[:]); err != nil {
		return nil, err
	}
	buf := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err := io.ReadFull(c.nc, buf)
	return buf, err
}

// recv reads the response to a request sent with send, checking the
// correlation id is corr.
func (c *rawConn) recv(corr int32, resp kmsg.Response) {
	c.t.Helper()
	frame, err := c.readFrame(10 * time.Second)
	if err != nil {
		c.t.Fatalf("reading response %d: %v", corr, err)
	}
	if got := int32(binary.BigEndian.Uint32(frame)); got != corr {
		c.t.Fatalf("response correlation id %d, want %d", got, corr)
	}
	body := frame[4:]
	if resp.IsFlexible() && resp.Key() != apiVersionsKey {
		body = body[1:] // empty tag buffer
	}
	if err := resp.ReadFrom(body); err != nil {
		c.t.Fatalf("decoding %T: %v", resp, err)
	}
}

// roundTrip sends req and decodes its response.
func (c *rawConn) roundTrip(req kmsg.Request) kmsg.Response {
	c.t.Helper()
	corr := c.send(req)
	resp := req.ResponseKind()
	c.recv(corr, resp)
	return resp
}

// expectClosed checks that the broker closes the connection without
// sending anything further.
func (c *rawConn) expectClosed() {
	c.t.Helper()
	frame, err := c.readFrame(10 * time.Second)
	if err == nil {
		c.t.Fatalf("connection still open: got a %d-byte response", len(frame))
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.t.Fatal("connection still open after 10s")
	}
}
