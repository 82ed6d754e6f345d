package metadata

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/kbroker/kbroker/metadata/listener"
)

// The controller RPC forwards controller operations to the active
// controller over package listener's frames (request {"op", "timeoutMs",
// "payload"}, response {"result"} or {"error"}). Errors travel as a stable
// code per sentinel (errorCodes) and the message; the caller gets a
// *remoteError that unwraps to the sentinel, so errors.Is works on both
// sides. A NOT_CONTROLLER error carries the address of the leader the
// server knows, if any.

// wireError is an error on the wire.
type wireError = listener.WireError

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
	{"INVALID_REMOTE_SEGMENT_STATE", ErrInvalidRemoteSegmentState},
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

// serveRPC answers requests on one connection until it fails or the Store
// closes (Close closes every tracked connection). peer is who the
// connection authenticated as.
func (s *Store) serveRPC(c net.Conn, peer peerIdentity) {
	listener.Serve(c, transportTimeout, func(req listener.Request) listener.Response {
		ctx, cancel := s.serverContext(req.TimeoutMs)
		var res any
		var err error
		if h, ok := handlers[req.Op]; ok {
			res, err = h(s, ctx, peer, req.Payload)
		} else {
			err = fmt.Errorf("metadata: unknown controller operation %q", req.Op)
		}
		cancel()
		var resp listener.Response
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
		return resp
	})
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

// callRemote sends one request to addr (on a pooled connection) and
// returns the raw result. A transport failure is returned as is; an error answered by
// the server as a *remoteError.
func (s *Store) callRemote(ctx context.Context, addr, op string, payload []byte) (json.RawMessage, error) {
	return remoteCall(ctx, s.dialer, addr, op, payload)
}

// remoteCall is callRemote with dialer d.
func remoteCall(ctx context.Context, d listener.Caller, addr, op string, payload []byte) (json.RawMessage, error) {
	raw, answered, err := d.Call(ctx, addr, op, payload)
	if err != nil {
		return nil, err
	}
	if answered != nil {
		return nil, fromWire(answered)
	}
	return raw, nil
}
