package listener

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// With SASL set (a SASL_PLAINTEXT or SASL_SSL controller listener)
// every connection runs a SASL exchange right after the TCP connect (and
// the TLS handshake with SASL_SSL), before the preamble: raft and the
// controller RPC only ever see authenticated peers. The exchange is not
// Kafka's SaslHandshake/SaslAuthenticate (this listener does not speak the
// Kafka protocol) but carries the same mechanisms and tokens in frames:
//
//	frame := uint32 length (big endian) | bytes   (length <= maxSASLFrame)
//	dialer  -> frame(mechanism name)
//	dialer  -> frame(client message)            } repeated until the
//	listener -> frame(status byte | server msg)  } status is not continue
//
// status is saslContinue (the server's challenge follows), saslOK (the
// exchange succeeded; the server's last message, e.g. SCRAM's
// server-final, follows and the client verifies it) or saslFailed (a
// message safe to show follows; the listener closes the connection).

// ServerSession is the server half of one exchange (package
// security/sasl's ServerSession, which metadata does not import).
type ServerSession interface {
	Mechanism() string
	Step(ctx context.Context, response []byte) (challenge []byte, err error)
	Done() bool
	Username() string
}

// ClientSession is the client half of one exchange (security/sasl's
// ClientSession).
type ClientSession interface {
	Mechanism() string
	Start() ([]byte, error)
	Step(challenge []byte) (response []byte, done bool, err error)
}

// SASL authenticates the controller listener's connections with SASL
// (metadata's Config.SASL, ControllerSASL there).
type SASL struct {
	// Start begins the server side of an exchange for the mechanism the
	// peer names; an error (a mechanism not enabled) refuses the peer.
	Start func(mechanism string) (ServerSession, error)
	// Client starts this node's own exchange when it dials another node
	// (sasl.mechanism.controller.protocol and its JAAS username/password).
	Client func() ClientSession
	// AuthorizeUser decides whether an authenticated user may speak on
	// the controller listener (super.users) and which node it is: bound
	// true with the node id for a principal that names one node, bound
	// false for a principal every node shares (then it may act for any
	// node, as in Kafka). ok false refuses the connection.
	AuthorizeUser func(user string) (nodeID int32, bound, ok bool)
}

const (
	saslContinue byte = 0
	saslOK       byte = 1
	saslFailed   byte = 2

	// maxSASLFrame bounds one SASL frame: a mechanism name or a SCRAM or
	// PLAIN message is far below it, so a larger length is an attack.
	maxSASLFrame = 4096
	// maxSASLRounds bounds an exchange; SCRAM needs two.
	maxSASLRounds = 4
)

var errSASLRefused = errors.New("SASL authentication refused")

func writeSASLFrame(w io.Writer, parts ...[]byte) error {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	if n > maxSASLFrame {
		return fmt.Errorf("SASL frame of %d bytes exceeds %d", n, maxSASLFrame)
	}
	buf := make([]byte, 4, 4+n)
	binary.BigEndian.PutUint32(buf, uint32(n))
	for _, p := range parts {
		buf = append(buf, p...)
	}
	_, err := w.Write(buf)
	return err
}

// readSASLFrame reads one frame; a declared length above maxSASLFrame is
// refused before anything is allocated.
func readSASLFrame(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxSASLFrame {
		return nil, fmt.Errorf("SASL frame of %d bytes exceeds %d", n, maxSASLFrame)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	return b, nil
}

// accept runs the server side of the exchange on c (deadline set by
// the caller) and returns who the peer is.
func (cs *SASL) accept(ctx context.Context, c net.Conn) (Peer, error) {
	// Buffered reads would swallow the preamble that follows the last
	// client message; the exchange has few small frames, read them raw.
	mech, err := readSASLFrame(c)
	if err != nil {
		return Peer{}, fmt.Errorf("SASL mechanism: %w", err)
	}
	session, err := cs.Start(string(mech))
	if err != nil {
		_ = writeSASLFrame(c, []byte{saslFailed}, []byte("unsupported SASL mechanism"))
		return Peer{}, fmt.Errorf("%w: %w", errSASLRefused, err)
	}
	for range maxSASLRounds {
		msg, err := readSASLFrame(c)
		if err != nil {
			return Peer{}, fmt.Errorf("SASL %s: %w", session.Mechanism(), err)
		}
		reply, err := session.Step(ctx, msg)
		if err != nil {
			// The detail stays in this node's log: the peer is told
			// nothing that would help it probe users.
			_ = writeSASLFrame(c, []byte{saslFailed}, []byte("authentication failed with SASL mechanism "+session.Mechanism()))
			return Peer{}, fmt.Errorf("%w: %w", errSASLRefused, err)
		}
		if !session.Done() {
			if err := writeSASLFrame(c, []byte{saslContinue}, reply); err != nil {
				return Peer{}, err
			}
			continue
		}
		user := session.Username()
		node, bound, ok := cs.AuthorizeUser(user)
		if !ok {
			_ = writeSASLFrame(c, []byte{saslFailed}, []byte("User:"+user+" may not use the controller listener"))
			return Peer{}, fmt.Errorf("%w: User:%s is not a node (not in super.users)", errSASLRefused, user)
		}
		if err := writeSASLFrame(c, []byte{saslOK}, reply); err != nil {
			return Peer{}, err
		}
		if !bound {
			// A principal all nodes share: authenticated, but it may act
			// for any node.
			return Peer{}, nil
		}
		return Peer{Verified: true, Node: node}, nil
	}
	_ = writeSASLFrame(c, []byte{saslFailed}, []byte("too many SASL rounds"))
	return Peer{}, fmt.Errorf("%w: SASL %s: more than %d rounds", errSASLRefused, session.Mechanism(), maxSASLRounds)
}

// dial runs the client side of the exchange on a fresh connection to
// addr; ctx bounds it.
func (cs *SASL) dial(ctx context.Context, c net.Conn, addr string) error {
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
		defer c.SetDeadline(time.Time{})
	}
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	session := cs.Client()
	msg, err := session.Start()
	if err != nil {
		return fmt.Errorf("metadata: SASL %s with %s: %w", session.Mechanism(), addr, err)
	}
	w := bufio.NewWriter(c)
	if err := writeSASLFrame(w, []byte(session.Mechanism())); err != nil {
		return err
	}
	for range maxSASLRounds {
		if err := writeSASLFrame(w, msg); err != nil {
			return err
		}
		if err := w.Flush(); err != nil {
			return fmt.Errorf("metadata: SASL with %s: %w", addr, err)
		}
		reply, err := readSASLFrame(c)
		if err != nil {
			return fmt.Errorf("metadata: SASL %s with %s: %w", session.Mechanism(), addr, err)
		}
		if len(reply) == 0 {
			return fmt.Errorf("metadata: SASL %s with %s: empty reply", session.Mechanism(), addr)
		}
		switch reply[0] {
		case saslFailed:
			return fmt.Errorf("metadata: SASL %s with %s: %w: %s", session.Mechanism(), addr, errSASLRefused, reply[1:])
		case saslContinue, saslOK:
		default:
			return fmt.Errorf("metadata: SASL %s with %s: bad status %d", session.Mechanism(), addr, reply[0])
		}
		next, done, err := session.Step(reply[1:])
		if err != nil {
			return fmt.Errorf("metadata: SASL %s with %s: %w", session.Mechanism(), addr, err)
		}
		if reply[0] == saslOK {
			if !done {
				return fmt.Errorf("metadata: SASL %s with %s: server ended the exchange early", session.Mechanism(), addr)
			}
			return nil
		}
		if done {
			return fmt.Errorf("metadata: SASL %s with %s: server did not confirm", session.Mechanism(), addr)
		}
		msg = next
	}
	return fmt.Errorf("metadata: SASL %s with %s: more than %d rounds", session.Mechanism(), addr, maxSASLRounds)
}
