package metadata

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

// The controller RPC forwards controller operations to the active
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
// The server answers requests one at a time in order; the client uses one
// connection per call. Errors travel as a stable code per sentinel
// (errorCodes) and the message; the caller gets a *remoteError that
// unwraps to the sentinel, so errors.Is works on both sides. A
// NOT_CONTROLLER error carries the address of the leader the server knows,
// if any.

// maxFrame bounds one RPC frame (a CreateTopics of many partitions).
const maxFrame = 16 << 20

type rpcRequest struct {
	Op        string          `json:"op"`
	TimeoutMs int64           `json:"timeoutMs,omitempty"`
	Payload   json.RawMessage `json:"payload"`
}

type rpcResponse struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  *wireError      `json:"error,omitempty"`
}

// wireError is an error on the wire.
type wireError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Leader  string `json:"leader,omitempty"`
}

// errorCodes maps sentinels to their stable wire codes. The first match
// (errors.Is) wins, so more specific errors come first.
var errorCodes = []struct {
	code string
	err  error
}{
	{"NOT_CONTROLLER", ErrNotController},
	{"TOPIC_ALREADY_EXISTS", ErrTopicExists},
	{"UNKNOWN_TOPIC", ErrUnknownTopic},
	{"INVALID_TOPIC", ErrInvalidTopic},
	{"DUPLICATE_TOPIC", ErrDuplicateTopic},
	{"INVALID_PARTITIONS", ErrInvalidPartitions},
	{"INVALID_REPLICATION_FACTOR", ErrInvalidReplicationFactor},
	{"INVALID_REPLICA_ASSIGNMENT", ErrInvalidReplicaAssignment},
	{"INVALID_CONFIG", ErrInvalidConfig},
	{"POLICY_VIOLATION", ErrPartitionLimit},
	{"UNKNOWN_BROKER", ErrUnknownBroker},
	{"STALE_BROKER_EPOCH", ErrStaleBrokerEpoch},
	{"STALE_PARTITION_EPOCH", ErrStalePartitionEpoch},
	{"FENCED_LEADER_EPOCH", ErrFencedLeaderEpoch},
	{"INVALID_PARTITION_CHANGE", ErrInvalidPartitionChange},
	{"CLUSTER_ID_SET", ErrClusterIDSet},
	{"UNSUPPORTED_RECORD", ErrUnsupportedRecord},
	{"CLUSTER_AUTHORIZATION_FAILED", ErrNotAuthorized},
	{"UNKNOWN_ACL", ErrUnknownACL},
	{"INVALID_ACL", ErrInvalidACL},
	{"SCRAM_NOT_FOUND", ErrScramNotFound},
	{"DUPLICATE_VOTER", ErrDuplicateVoter},
	{"VOTER_NOT_FOUND", ErrVoterNotFound},
	{"VOTER_NOT_READY", ErrVoterNotReady},
	{"VOTER_CHANGE_REFUSED", ErrVoterChangeRefused},
	{"CLOSED", ErrClosed},
	{"STALE_PRODUCER_ID_BLOCK", errStaleProducerIDBlock},
	{"TIMEOUT", context.DeadlineExceeded},
	{"CANCELED", context.Canceled},
}

// remoteError is an error returned by another node: its message, and the
// sentinel of its code (nil for UNKNOWN).
type remoteError struct {
	code, msg, leader string
	sentinel          error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.sentinel }

func toWire(err error) *wireError {
	if err == nil {
		return nil
	}
	var re *remoteError
	if errors.As(err, &re) {
		return &wireError{Code: re.code, Message: err.Error(), Leader: re.leader}
	}
	for _, c := range errorCodes {
		if errors.Is(err, c.err) {
			return &wireError{Code: c.code, Message: err.Error()}
		}
	}
	return &wireError{Code: "UNKNOWN", Message: err.Error()}
}

func fromWire(w *wireError) error {
	if w == nil {
		return nil
	}
	e := &remoteError{code: w.Code, msg: w.Message, leader: w.Leader}
	for _, c := range errorCodes {
		if c.code == w.Code {
			e.sentinel = c.err
			break
		}
	}
	return e
}

// errorList is a per-item result list (nil = success) that survives JSON.
type errorList []error

func (l errorList) MarshalJSON() ([]byte, error) {
	w := make([]*wireError, len(l))
	for i, err := range l {
		w[i] = toWire(err)
	}
	return json.Marshal(w)
}

func (l *errorList) UnmarshalJSON(b []byte) error {
	var w []*wireError
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*l = make(errorList, len(w))
	for i, e := range w {
		(*l)[i] = fromWire(e)
	}
	return nil
}

func writeFrame(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(b) > maxFrame {
		return fmt.Errorf("metadata: rpc frame of %d bytes exceeds %d", len(b), maxFrame)
	}
	buf := make([]byte, 4+len(b))
	binary.BigEndian.PutUint32(buf, uint32(len(b)))
	copy(buf[4:], b)
	_, err = w.Write(buf)
	return err
}

func readFrame(r io.Reader, v any) error {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxFrame {
		return fmt.Errorf("metadata: rpc frame of %d bytes exceeds %d", n, maxFrame)
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

// serveRPC answers requests on one connection until it fails or the Store
// closes (Close closes every tracked connection). peer is who the
// connection authenticated as.
func (s *Store) serveRPC(c net.Conn, peer peerIdentity) {
	r := bufio.NewReader(c)
	for {
		var req rpcRequest
		if err := readFrame(r, &req); err != nil {
			return
		}
		ctx, cancel := s.serverContext(req.TimeoutMs)
		var res any
		var err error
		if h, ok := handlers[req.Op]; ok {
			res, err = h(s, ctx, peer, req.Payload)
		} else {
			err = fmt.Errorf("metadata: unknown controller operation %q", req.Op)
		}
		cancel()
		var resp rpcResponse
		if err != nil {
			resp.Error = toWire(err)
			if errors.Is(err, ErrNotController) {
				resp.Error.Leader = s.leaderAddr()
			}
		} else {
			b, merr := json.Marshal(res)
			if merr != nil {
				resp.Error = toWire(merr)
			}
			resp.Result = b
		}
		c.SetWriteDeadline(time.Now().Add(transportTimeout))
		if err := writeFrame(c, &resp); err != nil {
			return
		}
	}
}

// serverContext is the context of one RPC: cancelled when the Store closes
// or the caller's timeout passes.
func (s *Store) serverContext(timeoutMs int64) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	stop := context.AfterFunc(s.ctx, cancel)
	if timeoutMs > 0 {
		tctx, tcancel := context.WithTimeout(ctx, time.Duration(timeoutMs)*time.Millisecond)
		return tctx, func() { tcancel(); stop(); cancel() }
	}
	return ctx, func() { stop(); cancel() }
}

// callRemote sends one request to addr on a new connection and returns the
// raw result. A transport failure is returned as is; an error answered by
// the server as a *remoteError.
func (s *Store) callRemote(ctx context.Context, addr, op string, payload []byte) (json.RawMessage, error) {
	return s.dialer.call(ctx, addr, op, payload)
}

// call sends one request to addr on a new connection (see callRemote).
func (d dialer) call(ctx context.Context, addr, op string, payload []byte) (json.RawMessage, error) {
	c, err := d.dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	req := rpcRequest{Op: op, Payload: payload}
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
		req.TimeoutMs = max(1, time.Until(dl).Milliseconds())
	}
	if _, err := c.Write([]byte{preambleRPC}); err != nil {
		return nil, err
	}
	if err := writeFrame(c, &req); err != nil {
		return nil, err
	}
	var resp rpcResponse
	if err := readFrame(bufio.NewReader(c), &resp); err != nil {
		return nil, err
	}
	if resp.Error != nil {
		return nil, fromWire(resp.Error)
	}
	return resp.Result, nil
}
