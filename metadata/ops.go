package metadata

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/raft"
	"github.com/kbroker/kbroker/metadata/listener"
)

// A controller operation is declared once, as an op: its wire name, the
// types of its request and response, and its implementation on the active
// controller. The caller (call) and the RPC server (handlers) share the
// declaration, so a caller cannot send a request or expect a response of
// another type than the implementation's: a mismatch does not compile.
//
//	var opHeartbeat = defineOp("Heartbeat", actsForBroker(...), func(s *Store, ctx context.Context, r brokerAtEpoch) (heartbeatResult, error) {...})
//	res, err := call(ctx, s, opHeartbeat, brokerAtEpoch{id, epoch})
//
// Locally (this node is the active controller) call passes req to run as
// is; remotely the request and response travel as JSON (rpc.go).
type op[Req, Resp any] struct {
	name string
	run  func(s *Store, ctx context.Context, req Req) (Resp, error)
	// actsFor names the node a request acts for, which must be the
	// authenticated peer that sends it (see authorizeOp); anyNode for an
	// operation any authenticated node may ask for.
	actsFor func(img *Image, req Req) int32
}

// none is the response of an operation that returns only an error.
type none = struct{}

// handler is the server end of one op: it decodes the payload, checks
// that peer may ask for it, runs it and returns the response to encode.
type handler func(s *Store, ctx context.Context, peer peerIdentity, payload json.RawMessage) (any, error)

// handlers holds the server end of every op, by wire name.
var handlers = map[string]handler{}

// defineOp declares a controller operation and registers its server end.
// Names are part of the wire protocol between nodes and must be unique.
func defineOp[Req, Resp any](name string, actsFor func(*Image, Req) int32, run func(*Store, context.Context, Req) (Resp, error)) *op[Req, Resp] {
	o := &op[Req, Resp]{name: name, run: run, actsFor: actsFor}
	if _, dup := handlers[name]; dup {
		panic("metadata: controller operation " + name + " defined twice")
	}
	handlers[name] = func(s *Store, ctx context.Context, peer peerIdentity, payload json.RawMessage) (any, error) {
		var req Req
		if err := json.Unmarshal(payload, &req); err != nil {
			return nil, fmt.Errorf("metadata: %s: bad request: %w", name, err)
		}
		if !s.IsController() {
			return nil, ErrNotController
		}
		if err := authorizeOp(s.Image(), name, peer, o.actsFor, req); err != nil {
			return nil, err
		}
		return run(s, ctx, req)
	}
	return o
}

// call runs a controller operation on the active controller: here when
// this node is the raft leader, else through the controller RPC at the
// leader's address (its raft address is its controller listener). A node
// that knows no leader asks the voters, which answer NOT_CONTROLLER with
// the leader they know. Not-leader answers and transport errors are
// retried with backoff while ctx allows (the leader moves during
// elections); when no leader can be found for Config.noLeaderWait, call
// gives up with ErrNotController. Any other error is the operation's.
//
// A transport error after the request was sent is retried too, so an
// operation may run twice; the second run then fails the way a repeated
// request would (e.g. ErrTopicExists).
func call[Req, Resp any](ctx context.Context, s *Store, o *op[Req, Resp], req Req) (Resp, error) {
	var zero Resp
	var payload []byte // encoded on the first remote attempt
	var (
		hint          string
		next          int // next voter to ask when no leader is known
		noLeaderSince time.Time
		backoff       = 5 * time.Millisecond
		lastErr       error
	)
	for {
		if s.ctx.Err() != nil {
			return zero, ErrClosed
		}
		leaderKnown := true
		if s.IsController() {
			res, err := o.run(s, ctx, req)
			if !errors.Is(err, ErrNotController) {
				return res, err
			}
			lastErr = err
		} else {
			addr := s.leaderAddr()
			fromRaft := addr != ""
			if addr == "" {
				addr, hint = hint, ""
			}
			if addr == "" {
				leaderKnown = false
				addr, next = s.someVoter(next)
			}
			if addr != "" {
				if payload == nil {
					b, err := json.Marshal(req)
					if err != nil {
						return zero, fmt.Errorf("metadata: %s: %w", o.name, err)
					}
					payload = b
				}
				known := "" // the leader raft names as the call starts
				if fromRaft {
					known = addr
				}
				raw, err := s.callWhileLeaderIs(ctx, known, addr, o.name, payload)
				var re *remoteError
				switch {
				case err == nil:
					var v Resp
					if len(raw) > 0 {
						if err := json.Unmarshal(raw, &v); err != nil {
							return zero, fmt.Errorf("metadata: %s: bad response: %w", o.name, err)
						}
					}
					return v, nil
				case errors.As(err, &re) && re.code == "CLOSED":
					lastErr = err // the remote node is shutting down
				case errors.As(err, &re) && re.code != "NOT_CONTROLLER":
					return zero, err
				case errors.As(err, &re):
					hint = re.leader
					if hint == addr {
						hint = ""
					}
					leaderKnown = leaderKnown && hint != ""
					lastErr = err
				default:
					lastErr = err
				}
			}
		}
		if leaderKnown {
			noLeaderSince = time.Time{}
		} else if noLeaderSince.IsZero() {
			noLeaderSince = time.Now()
		} else if time.Since(noLeaderSince) > s.cfg.noLeaderWait {
			return zero, fmt.Errorf("%w: %s: no leader (last error: %v)", ErrNotController, o.name, lastErr)
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return zero, fmt.Errorf("%w: %s: %w (last error: %v)", ErrNotController, o.name, ctx.Err(), lastErr)
		case <-s.ctx.Done():
			t.Stop()
			return zero, ErrClosed
		case <-t.C:
		}
		backoff = min(2*backoff, 200*time.Millisecond)
	}
}

// leaderWatchInterval is how often a call in flight checks that raft
// still names the leader it named when the call started.
const leaderWatchInterval = 50 * time.Millisecond

// callWhileLeaderIs is callRemote to addr, given up as soon as raft no
// longer names known as the leader ("" for no leader known), or this node
// becomes the leader. A leader that was paused or cut off never answers,
// and a voter asked while an election runs may be that paused node: the
// operation is better retried at the leader raft names now than held
// until its deadline.
func (s *Store) callWhileLeaderIs(ctx context.Context, known, addr, op string, payload []byte) (json.RawMessage, error) {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		t := time.NewTicker(leaderWatchInterval)
		defer t.Stop()
		for {
			select {
			case <-actx.Done():
				return
			case <-t.C:
				if s.leaderAddr() != known || s.IsController() {
					cancel(errLeaderMoved)
					return
				}
			}
		}
	}()
	raw, err := s.callRemote(actx, addr, op, payload)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(actx), errLeaderMoved) {
		return nil, fmt.Errorf("%w: asked %s", errLeaderMoved, addr)
	}
	return raw, err
}

var errLeaderMoved = errors.New("metadata: raft named another leader while the call was in flight")

// someVoter returns the address of a voter other than this node, starting
// at index i, and the index to ask next: the voters of Config.Voters, then
// those raft's configuration adds (AddVoter).
func (s *Store) someVoter(i int) (string, int) {
	vs := slices.Clone(s.cfg.Voters)
	if f := s.raft.GetConfiguration(); f.Error() == nil {
		for _, srv := range f.Configuration().Servers {
			id, ok := nodeID(srv.ID)
			if ok && srv.Suffrage == raft.Voter && !s.cfg.hasVoter(id) {
				vs = append(vs, Voter{ID: id, Addr: string(srv.Address)})
			}
		}
	}
	for range vs {
		v := vs[i%len(vs)]
		i++
		if v.ID != s.cfg.NodeID && v.Addr != "" {
			return v.Addr, i
		}
	}
	return "", i
}

// leaderAddr is the address of the leader this node knows, or "". A
// voter is dialed at its configured address (a name, resolved at each
// dial) rather than at the address the leader's raft messages carry: a
// leader that started with an older build advertises the IP it had then,
// which may since belong to another node, or to this one. This node is
// never its own remote leader: raft may still name it after it lost the
// leadership.
func (s *Store) leaderAddr() string {
	addr, id := s.raft.LeaderWithID()
	if id == serverID(s.cfg.NodeID) {
		return ""
	}
	for _, v := range s.cfg.Voters {
		if serverID(v.ID) != id {
			continue
		}
		if a, err := listener.ParseAddr(v.Addr); err == nil && a != nil {
			return v.Addr
		}
		break
	}
	return string(addr)
}
