package kafkatest

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// apiVersionsKey is the one API whose response header never carries
// tagged fields.
const apiVersionsKey = 18

// Conn speaks the Kafka protocol by hand, so tests can send requests
// no well-behaved client would.
type Conn struct {
	t testing.TB
	// NC is the connection; Corr the last correlation id sent.
	NC   net.Conn
	Corr int32
}

// Dial connects to a broker at addr; the connection closes when the test ends.
func Dial(t testing.TB, addr string) *Conn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &Conn{t: t, NC: nc}
}

// Send writes req with a request header and returns its correlation id.
func (c *Conn) Send(req kmsg.Request) int32 {
	c.t.Helper()
	c.Corr++
	body := c.Header(req.Key(), req.GetVersion(), req.IsFlexible())
	body = req.AppendTo(body)
	c.WriteFrame(body)
	return c.Corr
}

// Header is a v1 or v2 request header with the next correlation id.
func (c *Conn) Header(key, version int16, flexible bool) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(c.Corr))
	client := "raw-test"
	b = binary.BigEndian.AppendUint16(b, uint16(len(client)))
	b = append(b, client...)
	if flexible {
		b = append(b, 0) // no tagged fields
	}
	return b
}

// WriteFrame writes body as one size-prefixed frame.
func (c *Conn) WriteFrame(body []byte) {
	c.t.Helper()
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	frame = append(frame, body...)
	c.NC.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.NC.Write(frame); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// ReadFrame reads one response frame; io.EOF (or a reset) means the
// broker closed the connection.
func (c *Conn) ReadFrame(timeout time.Duration) ([]byte, error) {
	c.NC.SetReadDeadline(time.Now().Add(timeout))
	var size [4]byte
	if _, err := io.ReadFull(c.NC, size[:]); err != nil {
		return nil, err
	}
	buf := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err := io.ReadFull(c.NC, buf)
	return buf, err
}

// Recv reads the response to a request sent with Send, checking the
// correlation id is corr.
func (c *Conn) Recv(corr int32, resp kmsg.Response) {
	c.t.Helper()
	frame, err := c.ReadFrame(10 * time.Second)
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

// RoundTrip sends req and decodes its response.
func (c *Conn) RoundTrip(req kmsg.Request) kmsg.Response {
	c.t.Helper()
	corr := c.Send(req)
	resp := req.ResponseKind()
	c.Recv(corr, resp)
	return resp
}

// ExpectClosed checks that the broker closes the connection without
// sending anything further.
func (c *Conn) ExpectClosed() {
	c.t.Helper()
	frame, err := c.ReadFrame(10 * time.Second)
	if err == nil {
		c.t.Fatalf("connection still open: got a %d-byte response", len(frame))
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.t.Fatal("connection still open after 10s")
	}
}
