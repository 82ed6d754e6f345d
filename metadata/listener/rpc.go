package listener

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// The controller RPC carries controller operations to the active
// controller. A connection starts with the 'C' preamble, then carries
// frames in both directions:
//
//	+----------------+-------------------------+
//	| length: uint32 | JSON, length bytes      |
//	| big endian     |                         |
//	+----------------+-------------------------+
//
//	request   {"op": "CreateTopics", "timeoutMs": 4800, "payload": {...}}
//	response  {"result": {...}}  or  {"error": {"code": "TOPIC_ALREADY_EXISTS", "message": "...", "leader": "host:port"}}
//
// The server answers requests one at a time in order; a client has one
// call in flight per connection (Dialer.Call: a connection per call; Pool:
// connections kept between calls). Which operations exist and which error each code
// stands for is the metadata package's business, not the transport's.

// MaxFrame bounds one RPC frame (a CreateTopics of many partitions).
const MaxFrame = 16 << 20

// Request is one RPC request.
type Request struct {
	Op        string          `json:"op"`
	TimeoutMs int64           `json:"timeoutMs,omitempty"`
	Payload   json.RawMessage `json:"payload"`
}

// Response is one RPC response: a result, or an error.
type Response struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  *WireError      `json:"error,omitempty"`
}

// WireError is an error on the wire: a stable code, the error's text and,
// for NOT_CONTROLLER, the address of the leader the server knows.
type WireError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Leader  string `json:"leader,omitempty"`
}

// WriteFrame writes v as one frame.
func WriteFrame(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(b) > MaxFrame {
		return fmt.Errorf("metadata: rpc frame of %d bytes exceeds %d", len(b), MaxFrame)
	}
	buf := make([]byte, 4+len(b))
	binary.BigEndian.PutUint32(buf, uint32(len(b)))
	copy(buf[4:], b)
	_, err = w.Write(buf)
	return err
}

// ReadFrame reads one frame into v.
func ReadFrame(r io.Reader, v any) error {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > MaxFrame {
		return fmt.Errorf("metadata: rpc frame of %d bytes exceeds %d", n, MaxFrame)
	}
	// The buffer grows with the bytes that arrive, not with what the
	// length claims: a peer that announces 16 MiB and sends nothing costs
	// nothing.
	var buf bytes.Buffer
	if _, err := io.CopyN(&buf, r, int64(n)); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	return json.Unmarshal(buf.Bytes(), v)
}

// Serve answers the requests of one connection in order until reading or
// writing fails: answer gives each request's response, which must be
// written within writeTimeout.
func Serve(c net.Conn, writeTimeout time.Duration, answer func(Request) Response) {
	r := bufio.NewReader(c)
	for {
		var req Request
		if err := ReadFrame(r, &req); err != nil {
			return
		}
		resp := answer(req)
		c.SetWriteDeadline(time.Now().Add(writeTimeout))
		if err := WriteFrame(c, &resp); err != nil {
			return
		}
	}
}

// Call sends one request to addr on a new connection, with the deadline
// of ctx, and returns the raw result, or the error the server answered
// (answered), or the transport's error.
func (d Dialer) Call(ctx context.Context, addr, op string, payload []byte) (result json.RawMessage, answered *WireError, err error) {
	c, err := d.dialRPC(ctx, addr)
	if err != nil {
		return nil, nil, err
	}
	defer c.Close()
	result, answered, _, _, err = roundTrip(ctx, c, bufio.NewReader(c), op, payload)
	return result, answered, err
}

// dialRPC connects to addr and writes the RPC preamble.
func (d Dialer) dialRPC(ctx context.Context, addr string) (net.Conn, error) {
	c, err := d.Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	c.SetWriteDeadline(time.Now().Add(dialTimeout))
	if _, err := c.Write([]byte{PreambleRPC}); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}
