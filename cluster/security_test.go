package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/kafkatest"
	"github.com/kbroker/kbroker/internal/testutil"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/security"
	"github.com/kbroker/kbroker/security/sasl"
)

const testPlainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret" user_carol="carol-secret";`

// saslNode is a node with a PLAINTEXT listener and a SASL_PLAINTEXT one
// named SASL (PLAIN from JAAS, SCRAM-SHA-256 for bob from a test store).
type saslNode struct {
	*testNode
	sasl string // SASL listener host:port
}

func startSASLNode(t *testing.T, sets ...string) *saslNode {
	t.Helper()
	store := sasl.ScramCredentials{}
	cred, err := sasl.DeriveScramCredential(sasl.SHA256, "bob-secret", []byte("0123456789abcdef"), 4096)
	if err != nil {
		t.Fatal(err)
	}
	store.Add("bob", cred)
	dir := t.TempDir()
	ctrl := strconv.Itoa(testutil.Released(t, 1)[0])
	cfg, err := config.Load("", nil, append([]string{
		"node.id=1",
		"listeners=PLAINTEXT://127.0.0.1:0,SASL://127.0.0.1:0,CONTROLLER://127.0.0.1:" + ctrl,
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"inter.broker.listener.name=PLAINTEXT",
		"controller.quorum.voters=1@127.0.0.1:" + ctrl,
		"log.dirs=" + dir,
		"sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256",
		"listener.name.sasl.plain.sasl.jaas.config=" + testPlainJAAS,
	}, sets...))
	if err != nil {
		t.Fatal(err)
	}
	n, err := NewNode(cfg, testLogger(t), withScramStore(store))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tn := &testNode{Node: n, dir: dir, cancel: cancel, done: make(chan error, 1)}
	go func() { tn.done <- n.Run(ctx) }()
	select {
	case <-n.Ready():
	case err := <-tn.done:
		t.Fatalf("node exited before ready: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("node not ready after 30s")
	}
	t.Cleanup(func() { tn.stop(t) })
	tn.addr, _ = n.Addr("PLAINTEXT")
	addr, ok := n.Addr("SASL")
	if !ok {
		t.Fatal("no SASL listener")
	}
	return &saslNode{testNode: tn, sasl: addr}
}

func saslClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(),
		kgo.RetryTimeout(5 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func produceOne(ctx context.Context, cl *kgo.Client, topic, value string) error {
	return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(value)}).FirstErr()
}

// PLAIN and SCRAM clients produce; a wrong password or an unknown user is
// refused with SASL_AUTHENTICATION_FAILED, counted, and the broker goes
// on serving the others.
func TestSASLClients(t *testing.T) {
	node := startSASLNode(t, "auto.create.topics.enable=true", "offsets.topic.replication.factor=1")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	alice := saslClient(t, node.sasl, kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()))
	if err := produceOne(ctx, alice, "sasl-topic", "from alice"); err != nil {
		t.Fatalf("PLAIN produce: %v", err)
	}
	bob := saslClient(t, node.sasl, kgo.SASL(scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha256Mechanism()))
	if err := produceOne(ctx, bob, "sasl-topic", "from bob"); err != nil {
		t.Fatalf("SCRAM produce: %v", err)
	}

	for _, tc := range []struct {
		name, mech string
		opt        kgo.Opt
	}{
		{"wrong PLAIN password", "PLAIN", kgo.SASL(plain.Auth{User: "alice", Pass: "nope"}.AsMechanism())},
		{"unknown PLAIN user", "PLAIN", kgo.SASL(plain.Auth{User: "mallory", Pass: "x"}.AsMechanism())},
		{"wrong SCRAM password", "SCRAM-SHA-256", kgo.SASL(scram.Auth{User: "bob", Pass: "nope"}.AsSha256Mechanism())},
		{"unknown SCRAM user", "SCRAM-SHA-256", kgo.SASL(scram.Auth{User: "mallory", Pass: "x"}.AsSha256Mechanism())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			failures := func() float64 {
				return nodeMetric(t, node.Node, "kbroker_sasl_authentication_failures_total", "listener", "SASL", "mechanism", tc.mech)
			}
			before := failures()
			bad := saslClient(t, node.sasl, tc.opt, kgo.RequestRetries(0))
			_, err := bad.Request(ctx, kmsg.NewPtrMetadataRequest())
			if !errors.Is(err, kerr.SaslAuthenticationFailed) {
				t.Fatalf("metadata err = %v, want SASL_AUTHENTICATION_FAILED", err)
			}
			if got := failures(); got != before+1 {
				t.Errorf("kbroker_sasl_authentication_failures_total = %v, want %v", got, before+1)
			}
			if err := produceOne(ctx, alice, "sasl-topic", "still served"); err != nil {
				t.Fatalf("good client after a refusal: %v", err)
			}
		})
	}
}

// Before authentication only ApiVersions and the SASL requests are
// served; the SASL APIs are listed only on SASL listeners, and elsewhere
// answered with ILLEGAL_SASL_STATE before the connection is closed.
func TestSASLBeforeAuthentication(t *testing.T) {
	node := startSASLNode(t)
	keys := func(c *kafkatest.Conn) map[int16]bool {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 3
		resp := c.RoundTrip(req).(*kmsg.ApiVersionsResponse)
		out := map[int16]bool{}
		for _, k := range resp.ApiKeys {
			out[k.ApiKey] = true
		}
		return out
	}

	c := kafkatest.Dial(t, node.sasl)
	if k := keys(c); !k[17] || !k[36] {
		t.Errorf("SASL listener ApiVersions lacks SaslHandshake/SaslAuthenticate")
	}
	c.Send(kmsg.NewPtrMetadataRequest())
	c.ExpectClosed()

	p := kafkatest.Dial(t, node.addr)
	if k := keys(p); k[17] || k[36] {
		t.Errorf("PLAINTEXT listener ApiVersions lists the SASL APIs")
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "PLAIN"
	if r := p.RoundTrip(hs).(*kmsg.SASLHandshakeResponse); r.ErrorCode != kerr.IllegalSaslState.Code {
		t.Errorf("SaslHandshake on PLAINTEXT: error %v, want ILLEGAL_SASL_STATE", kerr.ErrorForCode(r.ErrorCode))
	}
	p.ExpectClosed()

	// An oversize frame before authentication closes the connection
	// before its body is read.
	huge := kafkatest.Dial(t, node.sasl)
	if _, err := huge.NC.Write([]byte{0, 0x10, 0, 0}); err != nil { // announces 1 MiB
		t.Fatal(err)
	}
	huge.ExpectClosed()

	// A Produce before SaslAuthenticate (after the handshake) closes too.
	d := kafkatest.Dial(t, node.sasl)
	if r := d.RoundTrip(hs).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
		t.Fatalf("handshake: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	d.Send(kmsg.NewPtrProduceRequest())
	d.ExpectClosed()
}

// rawAuth authenticates c as user with PLAIN over SaslHandshake v1.
func rawAuth(t *testing.T, c *kafkatest.Conn, user, pass string) *kmsg.SASLAuthenticateResponse {
	t.Helper()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "PLAIN"
	if r := c.RoundTrip(hs).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
		t.Fatalf("handshake: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.Version = 2
	auth.SASLAuthBytes = []byte("\x00" + user + "\x00" + pass)
	return c.RoundTrip(auth).(*kmsg.SASLAuthenticateResponse)
}

func metadataOK(t *testing.T, c *kafkatest.Conn) {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 9
	c.RoundTrip(req)
}

// SaslHandshake v0: the token travels as a raw frame, the reply too.
func TestSASLRawTokens(t *testing.T) {
	node := startSASLNode(t)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 0, "PLAIN"

	c := kafkatest.Dial(t, node.sasl)
	c.RoundTrip(hs)
	c.WriteFrame([]byte("\x00alice\x00alice-secret"))
	reply, err := c.ReadFrame(5 * time.Second)
	if err != nil || len(reply) != 0 {
		t.Fatalf("raw reply %q, %v; want an empty frame", reply, err)
	}
	metadataOK(t, c)

	bad := kafkatest.Dial(t, node.sasl)
	bad.RoundTrip(hs)
	bad.WriteFrame([]byte("\x00alice\x00wrong"))
	bad.ExpectClosed()
}

// connections.max.reauth.ms (KIP-368): the session lifetime is sent, a
// connection whose session ended is closed at its next request, a
// re-authentication as the same principal renews it, as another fails.
func TestSASLReauthentication(t *testing.T) {
	const lifetime = 700 * time.Millisecond
	node := startSASLNode(t, "connections.max.reauth.ms="+strconv.Itoa(int(lifetime.Milliseconds())),
		"auto.create.topics.enable=true")

	expired := kafkatest.Dial(t, node.sasl)
	if r := rawAuth(t, expired, "alice", "alice-secret"); r.ErrorCode != 0 || r.SessionLifetimeMillis != lifetime.Milliseconds() {
		t.Fatalf("authenticate: error %d, session lifetime %d", r.ErrorCode, r.SessionLifetimeMillis)
	}
	renewed := kafkatest.Dial(t, node.sasl)
	rawAuth(t, renewed, "alice", "alice-secret")
	other := kafkatest.Dial(t, node.sasl)
	rawAuth(t, other, "alice", "alice-secret")
	metadataOK(t, expired)

	time.Sleep(lifetime / 2)
	if r := rawAuth(t, renewed, "alice", "alice-secret"); r.ErrorCode != 0 {
		t.Fatalf("re-authentication: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := rawAuth(t, other, "carol", "carol-secret"); r.ErrorCode != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("re-authentication as another principal: error %d, want SASL_AUTHENTICATION_FAILED", r.ErrorCode)
	}
	other.ExpectClosed()

	time.Sleep(lifetime/2 + 100*time.Millisecond) // the first session has ended
	metadataOK(t, renewed)
	expired.Send(kmsg.NewPtrMetadataRequest())
	expired.ExpectClosed()

	// franz-go re-authenticates by itself and keeps producing.
	cl := saslClient(t, node.sasl, kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range 4 {
		if err := produceOne(ctx, cl, "reauth", "v"); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
		time.Sleep(lifetime / 2)
	}
}

// With a secure inter-broker listener only broker principals may fetch as
// followers: the inter-broker JAAS user and super.users; others (and
// ANONYMOUS on a PLAINTEXT listener) get TOPIC_AUTHORIZATION_FAILED.
func TestFollowerFetchNeedsBrokerPrincipal(t *testing.T) {
	const jaas = `org.apache.kafka.common.security.plain.PlainLoginModule required username="kb" password="kb-secret" ` +
		`user_kb="kb-secret" user_alice="alice-secret" user_root="root-secret";`
	node := startSASLNode(t, "inter.broker.listener.name=SASL", "sasl.mechanism.inter.broker.protocol=PLAIN",
		"listener.name.sasl.plain.sasl.jaas.config="+jaas, "super.users=User:root")
	createTopic(t, node.addr, "replicated", 1, nil)

	fetchErr := func(c *kafkatest.Conn) int16 {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.ReplicaID, req.MaxWaitMillis = 12, 2, 0
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = "replicated"
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.PartitionMaxBytes = 1 << 20
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		resp := c.RoundTrip(req).(*kmsg.FetchResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("fetch response %+v", resp)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	for _, tc := range []struct {
		user    string // "" = the PLAINTEXT listener
		refused bool
	}{
		{"kb", false},
		{"root", false},
		{"alice", true},
		{"", true},
	} {
		t.Run("user="+tc.user, func(t *testing.T) {
			var c *kafkatest.Conn
			if tc.user == "" {
				c = kafkatest.Dial(t, node.addr)
			} else {
				c = kafkatest.Dial(t, node.sasl)
				if r := rawAuth(t, c, tc.user, tc.user+"-secret"); r.ErrorCode != 0 {
					t.Fatalf("authenticate: %v", kerr.ErrorForCode(r.ErrorCode))
				}
			}
			code := fetchErr(c)
			if refused := code == kerr.TopicAuthorizationFailed.Code; refused != tc.refused {
				t.Fatalf("follower fetch error %v, refused %v want %v", kerr.ErrorForCode(code), refused, tc.refused)
			}
		})
	}
}

// Secrets are null and sensitive in DescribeConfigs.
func TestDescribeConfigsHidesSecrets(t *testing.T) {
	node := startSASLNode(t, "ssl.key.password=hunter2")
	cl := saslClient(t, node.addr)
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
	req.Resources = append(req.Resources, r)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, c := range resp.Resources[0].Configs {
		switch c.Name {
		case "ssl.key.password", "listener.name.sasl.plain.sasl.jaas.config":
			seen++
			if !c.IsSensitive || c.Value != nil {
				t.Errorf("%s: sensitive %v, value %v; want sensitive and null", c.Name, c.IsSensitive, c.Value)
			}
		case "sasl.enabled.mechanisms":
			seen++
			if c.IsSensitive || c.Value == nil || *c.Value != "PLAIN,SCRAM-SHA-256" {
				t.Errorf("%s: sensitive %v, value %v", c.Name, c.IsSensitive, c.Value)
			}
		}
	}
	if seen != 3 {
		t.Errorf("found %d of the 3 security keys", seen)
	}
}

// The controller listener's node identity: a super.users principal whose
// name ends in the node id.
func TestNodeIDOfPrincipal(t *testing.T) {
	for _, tc := range []struct {
		name string
		id   int32
		ok   bool
	}{
		{"CN=kb2", 2, true},
		{"kbroker-12", 12, true},
		{"CN=node7,O=acme", 0, false},
		{"admin", 0, false},
		{"CN=kb99999999999", 0, false}, // not an int32
	} {
		id, ok := nodeIDOf(tc.name)
		if ok != tc.ok || (ok && id != tc.id) {
			t.Errorf("nodeIDOf(%q) = %d, %v; want %d, %v", tc.name, id, ok, tc.id, tc.ok)
		}
	}
}

// A listener's keystore is reloaded while the node runs: new TLS
// connections get the new certificate.
func TestListenerCertificateReload(t *testing.T) {
	ca, err := security.NewCA(pkix.Name{CommonName: "reload CA"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	keystore := filepath.Join(t.TempDir(), "kb1.pem")
	writeKeystore := func(cn string) {
		t.Helper()
		cert, key, err := ca.Issue(security.CertRequest{Subject: pkix.Name{CommonName: cn},
			IPs: []net.IP{net.ParseIP("127.0.0.1")}, ServerAuth: true})
		if err != nil {
			t.Fatal(err)
		}
		keyPEM, _ := security.KeyPEM(key)
		tmp := keystore + ".tmp"
		if err := os.WriteFile(tmp, append(keyPEM, security.CertPEM(cert, ca.Cert)...), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, keystore); err != nil {
			t.Fatal(err)
		}
	}
	writeKeystore("first")
	node := startSASLNode(t, "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL:SASL_SSL,CONTROLLER:PLAINTEXT",
		"ssl.keystore.location="+keystore)
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	served := func() string {
		c, err := tls.Dial("tcp", node.sasl, &tls.Config{RootCAs: pool})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	if cn := served(); cn != "first" {
		t.Fatalf("served certificate CN=%s, want first", cn)
	}
	writeKeystore("second")
	testutil.Eventually(t, 20*time.Second, func() bool { return served() == "second" }, "the reloaded certificate")
}
