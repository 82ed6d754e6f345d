package metadata

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/testutil"
	"github.com/kbroker/kbroker/metadata/listener"

	"github.com/hashicorp/raft"
)

// testCA is a throwaway certificate authority.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// issue returns a certificate for 127.0.0.1 with common name cn, usable
// as a server and a client certificate.
func (ca *testCA) issue(t *testing.T, cn string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// clientTLS is a client config presenting cert (none if nil) and trusting
// ca.
func (ca *testCA) clientTLS(cert *tls.Certificate) *tls.Config {
	c := &tls.Config{RootCAs: ca.pool, MinVersion: tls.VersionTLS12}
	if cert != nil {
		c.Certificates = []tls.Certificate{*cert}
	}
	return c
}

// nodeFromCN is the tests' AuthorizePeer: a certificate "node-N" is node N;
// anything else is refused.
func nodeFromCN(st tls.ConnectionState) (int32, bool) {
	if len(st.PeerCertificates) == 0 {
		return 0, false
	}
	n, ok := strings.CutPrefix(st.PeerCertificates[0].Subject.CommonName, "node-")
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseInt(n, 10, 32)
	return int32(id), err == nil
}

// withMutualTLS gives each node of a test cluster a certificate "node-<id>"
// of ca.
func withMutualTLS(t *testing.T, ca *testCA) func(*Config) {
	return func(cfg *Config) {
		cert := ca.issue(t, fmt.Sprint("node-", cfg.NodeID))
		cfg.ServerTLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: ca.pool, MinVersion: tls.VersionTLS12}
		cfg.ClientTLS = ca.clientTLS(&cert)
		cfg.AuthorizePeer = nodeFromCN
	}
}

// TestTLSQuorum: three voters over mutual TLS form a quorum, forward
// operations, fail over; strangers are refused before they can act, and a
// node's certificate cannot act for another broker.
func TestTLSQuorum(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ca := newTestCA(t, "kbroker test CA")
	c := newTestCluster(t, 3, withMutualTLS(t, ca))
	for id, s := range c.stores {
		if err := s.RegisterBroker(ctx, BrokerRegistration{ID: id, IncarnationID: fmt.Sprint("inc-", id)}); err != nil {
			t.Fatalf("node %d registers itself: %v", id, err)
		}
	}
	f := c.follower()
	if errs := f.CreateTopics(ctx, []TopicSpec{{Name: "orders", NumPartitions: 3, ReplicationFactor: 3}}, false); errs[0] != nil {
		t.Fatalf("create via follower over TLS: %v", errs[0])
	}
	l := c.leader()
	leaderAddr := l.advertise
	topicID := c.converged().Topics["orders"].ID

	// Strangers: each fails before it can run DeleteTopics.
	other := newTestCA(t, "another CA")
	strangerCert := other.issue(t, "node-1") // the right name, the wrong CA
	unauthorized := ca.issue(t, "client-tool")
	deleteOrders, _ := json.Marshal([]string{"orders"})
	for _, tc := range []struct {
		name string
		d    listener.Dialer
	}{
		{"plaintext", listener.Dialer{}},
		{"no client certificate", listener.Dialer{TLS: ca.clientTLS(nil)}},
		{"certificate of another CA", listener.Dialer{TLS: ca.clientTLS(&strangerCert)}},
		{"certificate AuthorizePeer refuses", listener.Dialer{TLS: ca.clientTLS(&unauthorized)}},
	} {
		if _, err := remoteCall(ctx, tc.d, leaderAddr, opDeleteTopics.name, deleteOrders); err == nil {
			t.Errorf("%s: DeleteTopics answered", tc.name)
		}
	}

	// A forged AppendEntries, over a plain raft connection, with a
	// DeleteTopic record in a higher term.
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
			t.Errorf("node %d took a plaintext AppendEntries: %+v", s.cfg.NodeID, resp)
		}
	}
	if _, ok := c.converged().Topics["orders"]; !ok {
		t.Fatal("a stranger deleted orders")
	}
	for _, s := range c.stores {
		if term := s.RaftStatus().Term; term != st.Term {
			t.Fatalf("node %d moved to term %d (was %d)", s.cfg.NodeID, term, st.Term)
		}
	}

	// Node 2's certificate is node 2: it cannot act for broker 1.
	cert2 := ca.issue(t, "node-2")
	as2 := listener.Dialer{TLS: ca.clientTLS(&cert2)}
	epoch1 := l.Image().Brokers[1].Epoch
	hb1, _ := json.Marshal(brokerAtEpoch{BrokerID: 1, Epoch: epoch1})
	reg1, _ := json.Marshal(BrokerRegistration{ID: 1, IncarnationID: "impostor"})
	pid1, _ := json.Marshal(int32(1))
	dead3, _ := json.Marshal(deadReport{BrokerID: 3, ReportedBy: 1})
	join5, _ := json.Marshal(addNonvoterRequest{ID: 5, Addr: "127.0.0.1:1"})
	var notLed *Partition // a partition node 2 does not lead
	for _, p := range l.Image().Topics["orders"].Partitions {
		if p.Leader != 2 {
			notLed = p
		}
	}
	alter, _ := json.Marshal(PartitionChange{Topic: "orders", Partition: notLed.ID, Leader: notLed.Leader,
		ISR: []int32{notLed.Leader}, LeaderEpoch: notLed.LeaderEpoch, PartitionEpoch: notLed.PartitionEpoch})
	for _, tc := range []struct {
		op      string
		payload []byte
	}{
		{opHeartbeat.name, hb1},
		{opRegisterBroker.name, reg1},
		{opControlledShutdown.name, hb1},
		{opAllocateProducerIDs.name, pid1},
		{opReportBrokerDead.name, dead3},
		{opChangePartition.name, alter},
		{opAddNonvoter.name, join5},
	} {
		if _, err := remoteCall(ctx, as2, leaderAddr, tc.op, tc.payload); !errors.Is(err, ErrNotAuthorized) {
			t.Errorf("node 2 sends %s for broker 1: %v, want ErrNotAuthorized", tc.op, err)
		}
	}
	hb2, _ := json.Marshal(brokerAtEpoch{BrokerID: 2, Epoch: l.Image().Brokers[2].Epoch})
	if _, err := remoteCall(ctx, as2, leaderAddr, opHeartbeat.name, hb2); err != nil {
		t.Fatalf("node 2 heartbeats as itself: %v", err)
	}
	img := c.converged()
	if b := img.Brokers[1]; b.IncarnationID != "inc-1" || b.Fenced {
		t.Fatalf("broker 1 changed by node 2's requests: %+v", b)
	}
	if img.Brokers[3].Fenced {
		t.Fatal("broker 3 fenced by a report node 2 made in node 1's name")
	}
	if p, _ := img.Partition("orders", notLed.ID); p.PartitionEpoch != notLed.PartitionEpoch {
		t.Fatalf("partition changed by node 2, which does not lead it: %+v", p)
	}

	// A broker-only node joins raft over TLS, as itself; its certificate
	// cannot speak raft to a voter (only voters send raft requests).
	b := c.open(4, freeAddrs(t, 1)[0])
	c.ready()
	testutil.Eventually(t, 10*time.Second, func() error {
		if !b.inConfiguration() {
			return errors.New("not in its configuration")
		}
		return nil
	}, "node 4 joins as a non-voter")
	cert4 := ca.issue(t, "node-4")
	trans4 := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: listener.NewStreamLayer(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, listener.Dialer{TLS: ca.clientTLS(&cert4)}), MaxPool: 1, Timeout: 2 * time.Second,
	})
	defer trans4.Close()
	var vote raft.RequestVoteResponse
	forgedTerm := l.RaftStatus().Term + 10
	if err := trans4.RequestVote(serverID(l.cfg.NodeID), raft.ServerAddress(leaderAddr), &raft.RequestVoteRequest{
		RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("4"), Addr: []byte(b.advertise)},
		Term:      forgedTerm,
	}, &vote); err == nil {
		t.Fatalf("the leader answered a RequestVote from broker-only node 4: %+v", vote)
	}
	// Had the vote been heard, the leader would have stepped down to the
	// forged term. (Leadership itself may move on a loaded machine, so the
	// term is what tells.)
	for _, s := range c.stores {
		if term := s.RaftStatus().Term; term >= forgedTerm {
			t.Fatalf("node %d reached the forged term %d (now %d) after node 4's RequestVote", s.cfg.NodeID, forgedTerm, term)
		}
	}

	// Failover over TLS.
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

func TestTLSConfigValidation(t *testing.T) {
	ca := newTestCA(t, "ca")
	cert := ca.issue(t, "node-1")
	srv := &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: ca.pool}
	for _, tc := range []struct {
		name string
		set  func(*Config)
	}{
		{"server without client", func(c *Config) { c.ServerTLS, c.AuthorizePeer = srv, nodeFromCN }},
		{"client without server", func(c *Config) { c.ClientTLS = ca.clientTLS(&cert) }},
		{"no AuthorizePeer", func(c *Config) { c.ServerTLS, c.ClientTLS = srv, ca.clientTLS(&cert) }},
	} {
		cfg := testConfig(t.TempDir())
		tc.set(&cfg)
		if s, err := Open(cfg); err == nil {
			s.Close()
			t.Errorf("%s: Open accepted it", tc.name)
		}
	}
}

// countingHandler counts the records whose message contains substr.
type countingHandler struct {
	substr string
	n      *atomic.Int32
}

func (h countingHandler) Handle(ctx context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.substr) {
		h.n.Add(1)
	}
	return nil
}

func (h countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h countingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h countingHandler) WithGroup(string) slog.Handler            { return h }

// TestPlaintextWarning: a PLAINTEXT controller listener is announced once
// at Open; a TLS one is not.
func TestPlaintextWarning(t *testing.T) {
	ca := newTestCA(t, "ca")
	for _, tc := range []struct {
		name string
		tls  bool
		want int32
	}{{"plaintext", false, 1}, {"tls", true, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int32
			cfg := testConfig(t.TempDir())
			cfg.Logger = slog.New(countingHandler{substr: "unauthenticated", n: &n})
			if tc.tls {
				withMutualTLS(t, ca)(&cfg)
			}
			openReady(t, cfg)
			if got := n.Load(); got != tc.want {
				t.Fatalf("%d warnings, want %d", got, tc.want)
			}
		})
	}
}
