package metadata

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strconv"
	"syscall"
	"time"

	"github.com/kbroker/kbroker/metadata/listener"
)

// probeTimeout bounds the active controller's own check of a broker
// reported dead. A refused connection answers at once; a broker that is
// only slow or cut off by a network partition times out, which proves
// nothing, and the report falls back to DeadReportGrace.
const probeTimeout = 250 * time.Millisecond

// refusesConnections reports whether every registered endpoint of b
// refuses TCP connections: nothing listens there, so the broker process
// is gone (kill -9, crash) even if its last heartbeat is recent. This is
// what lets a dead report fence at once rather than after
// DeadReportGrace: waiting out the grace after a crash is seconds of
// unavailability for every partition the broker led. A wrong report
// cannot fence a live broker this way, since a live broker accepts.
func refusesConnections(ctx context.Context, b *Broker) bool {
	if len(b.Endpoints) == 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var d net.Dialer
	for _, e := range b.Endpoints {
		c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port))))
		if err == nil {
			c.Close()
			return false
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return false
		}
	}
	return true
}

// opPing is answered by every node's controller listener, controller or
// not: an answer proves the process is running and serving (not paused,
// not cut off), which a TCP connect alone does not (a paused process's
// kernel still accepts).
const opPing = "Ping"

func init() {
	handlers[opPing] = func(*Store, context.Context, peerIdentity, json.RawMessage) (any, error) {
		return none{}, nil
	}
}

// pingTimeout bounds the active controller's ping of a silent broker. A
// live node answers within milliseconds; it is generous for a loaded
// machine, since a wrong verdict fences a live broker.
const pingTimeout = time.Second

// answersPing reports whether node id's controller listener answers a
// ping within pingTimeout. A node whose address is unknown counts as
// answering: no verdict without a probe.
func (s *Store) answersPing(ctx context.Context, id int32) bool {
	addr := s.controllerAddr(id)
	if addr == "" {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	_, err := s.callRemote(ctx, addr, opPing, []byte("{}"))
	var re *remoteError
	return err == nil || errors.As(err, &re)
}

// controllerAddr is node id's controller listener address: its Voters
// entry, else its address in the raft configuration (a broker-only node
// added as a non-voter), else "".
func (s *Store) controllerAddr(id int32) string {
	for _, v := range s.cfg.Voters {
		if v.ID == id {
			if a, err := listener.ParseAddr(v.Addr); err == nil && a != nil {
				return v.Addr
			}
		}
	}
	f := s.raft.GetConfiguration()
	if f.Error() != nil {
		return ""
	}
	for _, srv := range f.Configuration().Servers {
		if srv.ID == serverID(id) {
			return string(srv.Address)
		}
	}
	return ""
}

// probeSilent pings, in the background, the unfenced brokers silent for
// Config.ProbeSilence (at most one ping per broker in flight), and fences
// those that do not answer and are still silent. The session timeout
// would fence them too, many seconds later, while every partition they
// lead or follow in an ISR stalls: a paused or cut-off broker answers
// nothing, a live broker with a late heartbeat answers the ping and stays
// unfenced.
func (s *Store) probeSilent(now time.Time) {
	img := s.Image()
	for _, id := range img.UnfencedBrokerIDs() {
		if id == s.cfg.NodeID || s.sessions.silence(id, now) < s.cfg.ProbeSilence {
			continue
		}
		epoch := img.Brokers[id].Epoch
		if !s.sessions.startProbe(id) {
			continue
		}
		s.goFunc(func() {
			defer s.sessions.endProbe(id)
			if s.answersPing(s.ctx, id) {
				return
			}
			b, ok := s.Image().Brokers[id]
			if !ok || b.Fenced || b.Epoch != epoch || s.sessions.silence(id, time.Now()) < s.cfg.ProbeSilence {
				return
			}
			ctx, cancel := context.WithTimeout(s.ctx, transportTimeout)
			defer cancel()
			if err := s.fenceBroker(ctx, id, epoch, true, false); err != nil {
				s.log.Debug("fence silent broker", "broker", id, "err", err)
				return
			}
			s.log.Info("fenced broker: silent and not answering a ping", "broker", id, "epoch", epoch,
				"silent", s.sessions.silence(id, time.Now()).Round(time.Millisecond))
		})
	}
}
