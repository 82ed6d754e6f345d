package metadata

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/kbroker/kbroker/internal/testutil"
	"github.com/kbroker/kbroker/metadata/listener"
)

// saslUsers are the nodes' credentials: "node-N" is bound to node N,
// "shared" may act for any node, "client" authenticates but is no node.
var saslUsers = map[string]string{"node-1": "pw-1", "node-2": "pw-2", "node-3": "pw-3", "node-4": "pw-4", "shared": "pw-s", "client": "pw-c"}

func saslAuthorize(user string) (int32, bool, bool) {
	switch {
	case user == "shared":
		return -1, false, true
	case strings.HasPrefix(user, "node-"):
		var id int32
		_, err := fmt.Sscanf(user, "node-%d", &id)
		return id, true, err == nil
	}
	return -1, false, false
}

// The tests' mechanisms (the real PLAIN and SCRAM live in security/sasl,
// which metadata does not import; the itest runs SCRAM end to end):
// ONESTEP sends "user\x00password" once; TWOSTEP gets a nonce, answers
// "user\x00password+nonce", and checks the server's final "ok:<nonce>",
// so that the exchange has a challenge and a server-final as SCRAM does.
const (
	mechOneStep = "ONESTEP"
	mechTwoStep = "TWOSTEP"
)

type testServerSession struct {
	mech, user, nonce string
	step              int
	done              bool
}

func (s *testServerSession) Mechanism() string { return s.mech }
func (s *testServerSession) Done() bool        { return s.done }
func (s *testServerSession) Username() string  { return s.user }
func (s *testServerSession) Step(_ context.Context, msg []byte) ([]byte, error) {
	s.step++
	if s.mech == mechTwoStep && s.step == 1 {
		s.nonce = fmt.Sprint(time.Now().UnixNano())
		return []byte(s.nonce), nil
	}
	user, pass, ok := strings.Cut(string(msg), "\x00")
	if !ok || saslUsers[user] == "" || saslUsers[user]+s.nonce != pass {
		return nil, errors.New("invalid credentials")
	}
	s.user, s.done = user, true
	return []byte("ok:" + s.nonce), nil
}

type testClientSession struct {
	mech, user, pass, nonce string
	step                    int
}

func (c *testClientSession) Mechanism() string { return c.mech }
func (c *testClientSession) Start() ([]byte, error) {
	if c.mech == mechTwoStep {
		return []byte("hello"), nil
	}
	return []byte(c.user + "\x00" + c.pass), nil
}
func (c *testClientSession) Step(challenge []byte) ([]byte, bool, error) {
	c.step++
	if c.mech == mechTwoStep && c.step == 1 {
		c.nonce = string(challenge)
		return []byte(c.user + "\x00" + c.pass + c.nonce), false, nil
	}
	if string(challenge) != "ok:"+c.nonce {
		return nil, false, fmt.Errorf("server final %q does not confirm", challenge)
	}
	return nil, true, nil
}

// testControllerSASL authenticates as user with password over mech.
func testControllerSASL(t *testing.T, mech, user, password string) *ControllerSASL {
	t.Helper()
	return &ControllerSASL{
		Start: func(m string) (SASLServerSession, error) {
			if m != mechOneStep && m != mechTwoStep {
				return nil, fmt.Errorf("unsupported mechanism %q", m)
			}
			return &testServerSession{mech: m}, nil
		},
		Client:        func() SASLClientSession { return &testClientSession{mech: mech, user: user, pass: password} },
		AuthorizeUser: saslAuthorize,
	}
}

// TestSASLQuorum: three voters whose controller listener is SASL (each
// mechanism) form a quorum and forward operations; a stranger without
// credentials, with a wrong password or as a user that is not a node gets
// nothing done, a forged AppendEntries is refused and nothing applied,
// node 2's credentials cannot act for broker 1, and a node with wrong
// credentials cannot join.
func TestSASLQuorum(t *testing.T) {
	for _, mech := range []string{mechOneStep, mechTwoStep} {
		t.Run(mech, func(t *testing.T) {
			if testing.Short() && mech != mechTwoStep {
				t.Skip("-short: the two-step mechanism only")
			}
			testSASLQuorum(t, mech)
		})
	}
}

func testSASLQuorum(t *testing.T, mech string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	passwords := map[int32]string{1: "pw-1", 2: "pw-2", 3: "pw-3", 4: "wrong"}
	c := newTestCluster(t, 3, func(cfg *Config) {
		cfg.SASL = testControllerSASL(t, mech, fmt.Sprint("node-", cfg.NodeID), passwords[cfg.NodeID])
	})
	for id, s := range c.stores {
		if err := s.RegisterBroker(ctx, BrokerRegistration{ID: id, IncarnationID: fmt.Sprint("inc-", id)}); err != nil {
			t.Fatalf("node %d registers itself: %v", id, err)
		}
	}
	if errs := c.follower().CreateTopics(ctx, []TopicSpec{{Name: "orders", NumPartitions: 3, ReplicationFactor: 3}}, false); errs[0] != nil {
		t.Fatalf("create via follower over SASL: %v", errs[0])
	}
	l := c.leader()
	leaderAddr := l.advertise
	topicID := c.converged().Topics["orders"].ID

	deleteOrders, _ := json.Marshal([]string{"orders"})
	for _, tc := range []struct {
		name string
		d    listener.Dialer
	}{
		{"no credentials", listener.Dialer{}},
		{"wrong password", listener.Dialer{SASL: testControllerSASL(t, mech, "node-1", "nope")}},
		{"unknown user", listener.Dialer{SASL: testControllerSASL(t, mech, "mallory", "pw-1")}},
		{"unsupported mechanism", listener.Dialer{SASL: testControllerSASL(t, "GSSAPI", "node-1", "pw-1")}},
		{"a user that is not a node", listener.Dialer{SASL: testControllerSASL(t, mech, "client", "pw-c")}},
	} {
		if _, err := remoteCall(ctx, tc.d, leaderAddr, opDeleteTopics.name, deleteOrders); err == nil {
			t.Errorf("%s: DeleteTopics answered", tc.name)
		}
	}

	// A forged AppendEntries over an unauthenticated raft connection.
	forged, _ := encodeRecord(recDeleteTopic, &deleteTopicRecord{TopicID: topicID})
	st := l.RaftStatus()
	trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: listener.NewStreamLayer(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, listener.Dialer{}), MaxPool: 1, Timeout: 2 * time.Second,
	})
	defer trans.Close()
	var resp raft.AppendEntriesResponse
	for _, s := range c.stores {
		err := trans.AppendEntries(serverID(s.cfg.NodeID), raft.ServerAddress(s.advertise), &raft.AppendEntriesRequest{
			RPCHeader:         raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("9"), Addr: []byte("127.0.0.1:1")},
			Term:              st.Term + 10,
			PrevLogEntry:      st.LastLogIndex,
			PrevLogTerm:       st.Term,
			Entries:           []*raft.Log{{Index: st.LastLogIndex + 1, Term: st.Term + 10, Type: raft.LogCommand, Data: forged}},
			LeaderCommitIndex: st.LastLogIndex + 1,
		}, &resp)
		if err == nil {
			t.Errorf("node %d took an unauthenticated AppendEntries: %+v", s.cfg.NodeID, resp)
		}
	}
	if _, ok := c.converged().Topics["orders"]; !ok {
		t.Fatal("a stranger deleted orders")
	}
	for _, s := range c.stores {
		if term := s.RaftStatus().Term; term >= st.Term+10 {
			t.Fatalf("node %d reached the forged term %d", s.cfg.NodeID, term)
		}
	}

	// node-2 is bound to node 2; "shared" may act for any node.
	as2 := listener.Dialer{SASL: testControllerSASL(t, mech, "node-2", "pw-2")}
	hb1, _ := json.Marshal(brokerAtEpoch{BrokerID: 1, Epoch: l.Image().Brokers[1].Epoch})
	if _, err := remoteCall(ctx, as2, leaderAddr, opHeartbeat.name, hb1); !errors.Is(err, ErrNotAuthorized) {
		t.Errorf("node 2 heartbeats for broker 1: %v, want ErrNotAuthorized", err)
	}
	reg1, _ := json.Marshal(BrokerRegistration{ID: 1, IncarnationID: "impostor"})
	if _, err := remoteCall(ctx, as2, leaderAddr, opRegisterBroker.name, reg1); !errors.Is(err, ErrNotAuthorized) {
		t.Errorf("node 2 registers as broker 1: %v, want ErrNotAuthorized", err)
	}
	shared := listener.Dialer{SASL: testControllerSASL(t, mech, "shared", "pw-s")}
	if _, err := remoteCall(ctx, shared, leaderAddr, opHeartbeat.name, hb1); err != nil {
		t.Errorf("the shared node principal heartbeats for broker 1: %v", err)
	}
	if b := c.converged().Brokers[1]; b.IncarnationID != "inc-1" {
		t.Fatalf("broker 1 re-registered by node 2: %+v", b)
	}

	// Node 4 has a wrong password: it never gets into the configuration.
	b := c.open(4, freeAddrs(t, 1)[0])
	testutil.CheckFor(t, 3*time.Second, func() error {
		if b.inConfiguration() {
			return errors.New("node 4 joined with a wrong password")
		}
		cf := l.raft.GetConfiguration()
		if err := cf.Error(); err != nil {
			return nil // e.g. leadership moved; checked again next round
		}
		for _, srv := range cf.Configuration().Servers {
			if srv.ID == serverID(4) {
				return errors.New("the leader added node 4")
			}
		}
		return nil
	}, "node 4 stays out")

	// Failover with SASL.
	c.close(4)
	oldID := l.cfg.NodeID
	c.close(oldID)
	if c.leader().cfg.NodeID == oldID {
		t.Fatal("closed leader still leads")
	}
	for _, s := range c.stores {
		if errs := s.CreateTopics(ctx, []TopicSpec{{Name: fmt.Sprint("after-", s.cfg.NodeID), NumPartitions: 1, ReplicationFactor: 2}}, false); errs[0] != nil {
			t.Fatalf("create on node %d after failover: %v", s.cfg.NodeID, errs[0])
		}
	}
}
