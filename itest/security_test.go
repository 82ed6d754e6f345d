package itest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/kbroker/kbroker/internal/testutil"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/kbroker/kbroker/security"
)

// pki is a test CA writing PEM files into a temp dir.
type pki struct {
	t   testing.TB
	ca  *security.CA
	dir string
}

func newPKI(t testing.TB, name string) *pki {
	t.Helper()
	ca, err := security.NewCA(pkix.Name{CommonName: name}, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	p := &pki{t: t, ca: ca, dir: t.TempDir()}
	p.write("ca.pem", security.CertPEM(ca.Cert))
	return p
}

func (p *pki) write(name string, data []byte) string {
	p.t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		p.t.Fatal(err)
	}
	return path
}

func (p *pki) caFile() string { return filepath.Join(p.dir, "ca.pem") }

// issue writes <cn>.pem (key and chain, a keystore) and <cn>-key.pem,
// <cn>-cert.pem (for kcat); the certificate is valid for localhost and
// 127.0.0.1.
func (p *pki) issue(cn string) (keystore string, cert tls.Certificate) {
	p.t.Helper()
	return p.issueFor(cn, []net.IP{net.ParseIP("127.0.0.1")})
}

// issueFor is issue with the certificate valid for localhost and ips.
func (p *pki) issueFor(cn string, ips []net.IP) (keystore string, cert tls.Certificate) {
	p.t.Helper()
	c, key, err := p.ca.Issue(security.CertRequest{Subject: pkix.Name{CommonName: cn}, DNSNames: []string{"localhost"},
		IPs: ips, ServerAuth: true, ClientAuth: true})
	if err != nil {
		p.t.Fatal(err)
	}
	keyPEM, err := security.KeyPEM(key)
	if err != nil {
		p.t.Fatal(err)
	}
	chain := security.CertPEM(c, p.ca.Cert)
	p.write(cn+"-key.pem", keyPEM)
	p.write(cn+"-cert.pem", chain)
	cert, err = tls.X509KeyPair(chain, keyPEM)
	if err != nil {
		p.t.Fatal(err)
	}
	return p.write(cn+".pem", append(keyPEM, chain...)), cert
}

func (p *pki) pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(p.ca.Cert)
	return pool
}

const itestPlainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";`

// secureBroker is one broker with a listener of each security protocol
// besides the PLAINTEXT one the harness uses:
// SASLSSL (SASL_SSL, PLAIN), SSL (no client certificate), MTLS (SSL with
// ssl.client.auth=required) and SASLPLAIN (SASL_PLAINTEXT, PLAIN).
type secureBroker struct {
	*broker
	pki   *pki
	addrs map[string]string
}

func startSecureBroker(t *testing.T) *secureBroker {
	t.Helper()
	p := newPKI(t, "itest CA")
	keystore, _ := p.issue("kb1")
	ports := testutil.Released(t, 6)
	addrs := map[string]string{}
	var ls, adv []string
	for i, name := range []string{"PLAINTEXT", "SASLSSL", "SSL", "MTLS", "SASLPLAIN"} {
		if i == 0 {
			continue
		}
		addrs[name] = fmt.Sprintf("127.0.0.1:%d", ports[i])
		ls = append(ls, name+"://"+addrs[name])
		adv = append(adv, name+"://"+addrs[name])
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	ctrl := fmt.Sprintf("127.0.0.1:%d", ports[5])
	b := newBroker(t, 1, t.TempDir(), addr, ctrl, "1@"+ctrl,
		"listeners=PLAINTEXT://"+addr+",CONTROLLER://"+ctrl+","+strings.Join(ls, ","),
		"advertised.listeners=PLAINTEXT://"+addr+","+strings.Join(adv, ","),
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASLSSL:SASL_SSL,SSL:SSL,MTLS:SSL,SASLPLAIN:SASL_PLAINTEXT",
		"inter.broker.listener.name=PLAINTEXT",
		"ssl.keystore.location="+keystore,
		"ssl.truststore.location="+p.caFile(),
		"listener.name.mtls.ssl.client.auth=required",
		"sasl.enabled.mechanisms=PLAIN",
		"listener.name.saslssl.plain.sasl.jaas.config="+itestPlainJAAS,
		"listener.name.saslplain.plain.sasl.jaas.config="+itestPlainJAAS,
		"offsets.topic.replication.factor=1",
		"group.initial.rebalance.delay.ms=0",
	)
	b.start()
	return &secureBroker{broker: b, pki: p, addrs: addrs}
}

// roundTrip checks a client through produce, consume and a consumer
// group on topic.
func roundTrip(t *testing.T, seed, topic string, opts ...kgo.Opt) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	base := append([]kgo.Opt{kgo.SeedBrokers(seed), kgo.AllowAutoTopicCreation()}, opts...)
	prod, err := kgo.NewClient(base...)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	const n = 20
	for i := range n {
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	cons, err := kgo.NewClient(append(base, kgo.ConsumeTopics(topic), kgo.ConsumerGroup("g-"+topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	got := 0
	for got < n {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d: %v", got, n, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		got += fs.NumRecords()
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("group commit: %v", err)
	}
}

// franz-go produces, consumes and commits as a group over every security
// protocol; the refusals fail cleanly and the broker keeps serving.
func TestSecurityListeners(t *testing.T) {
	b := startSecureBroker(t)
	_, clientCert := b.pki.issue("client")
	trust := &tls.Config{RootCAs: b.pki.pool()}
	withCert := &tls.Config{RootCAs: b.pki.pool(), Certificates: []tls.Certificate{clientCert}}
	alice := kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())

	t.Run("clients", func(t *testing.T) {
		for _, tc := range []struct {
			listener string
			opts     []kgo.Opt
		}{
			{"SASLSSL", []kgo.Opt{kgo.DialTLSConfig(trust), alice}},
			{"SSL", []kgo.Opt{kgo.DialTLSConfig(trust)}},
			{"MTLS", []kgo.Opt{kgo.DialTLSConfig(withCert)}},
			{"SASLPLAIN", []kgo.Opt{alice}},
		} {
			t.Run(tc.listener, func(t *testing.T) {
				roundTrip(t, b.addrs[tc.listener], "sec-"+strings.ToLower(tc.listener), tc.opts...)
			})
		}
	})

	other := newPKI(t, "untrusted CA")
	_, strangerCert := other.issue("stranger")
	t.Run("refusals", func(t *testing.T) {
		for _, tc := range []struct {
			name, listener string
			opts           []kgo.Opt
			want           error // nil: any error
		}{
			{"wrong password", "SASLSSL", []kgo.Opt{kgo.DialTLSConfig(trust),
				kgo.SASL(plain.Auth{User: "alice", Pass: "wrong"}.AsMechanism())}, kerr.SaslAuthenticationFailed},
			{"unknown user", "SASLSSL", []kgo.Opt{kgo.DialTLSConfig(trust),
				kgo.SASL(plain.Auth{User: "mallory", Pass: "x"}.AsMechanism())}, kerr.SaslAuthenticationFailed},
			{"no client certificate", "MTLS", []kgo.Opt{kgo.DialTLSConfig(trust)}, nil},
			{"untrusted client certificate", "MTLS", []kgo.Opt{kgo.DialTLSConfig(&tls.Config{RootCAs: b.pki.pool(),
				Certificates: []tls.Certificate{strangerCert}})}, nil},
			{"PLAINTEXT client on a TLS port", "SSL", nil, nil},
			{"client without SASL on a SASL port", "SASLPLAIN", nil, nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.addrs[tc.listener]), kgo.RequestRetries(0),
					kgo.DialTimeout(3 * time.Second)}, tc.opts...)...)
				if err != nil {
					t.Fatal(err)
				}
				defer cl.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
				defer cancel()
				_, err = cl.Request(ctx, kmsg.NewPtrMetadataRequest())
				switch {
				case err == nil:
					t.Fatal("request succeeded")
				case tc.want != nil && !errors.Is(err, tc.want):
					t.Fatalf("err = %v, want %v", err, tc.want)
				}
				// The broker goes on serving the others.
				roundTrip(t, b.addrs["SASLSSL"], "sec-after-refusal", kgo.DialTLSConfig(trust), alice)
			})
		}
	})

	// A Produce after SaslHandshake but before SaslAuthenticate, over
	// TLS: the broker closes the connection and serves the others.
	t.Run("produce before SaslAuthenticate", func(t *testing.T) {
		nc, err := tls.Dial("tcp", b.addrs["SASLSSL"], trust)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Version, hs.Mechanism = 1, "PLAIN"
		writeRequest(t, nc, 1, hs)
		if _, err := readResponseFrame(nc); err != nil {
			t.Fatalf("SaslHandshake response: %v", err)
		}
		p := kmsg.NewPtrProduceRequest()
		p.Version, p.Acks, p.TimeoutMillis = 9, 1, 1000
		writeRequest(t, nc, 2, p)
		if frame, err := readResponseFrame(nc); err == nil {
			t.Fatalf("got a %d-byte response to a Produce before authentication", len(frame))
		}
		roundTrip(t, b.addrs["SASLSSL"], "sec-after-refusal", kgo.DialTLSConfig(trust), alice)
	})

	t.Run("kcat", func(t *testing.T) {
		kcat, err := exec.LookPath("kcat")
		if err != nil {
			t.Skip("kcat not installed")
		}
		ca := b.pki.caFile()
		for _, tc := range []struct {
			name, listener string
			args           []string
		}{
			{"SASL_SSL PLAIN", "SASLSSL", []string{"-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=PLAIN",
				"-X", "sasl.username=alice", "-X", "sasl.password=alice-secret", "-X", "ssl.ca.location=" + ca}},
			{"SSL client certificate", "MTLS", []string{"-X", "security.protocol=SSL", "-X", "ssl.ca.location=" + ca,
				"-X", "ssl.certificate.location=" + filepath.Join(b.pki.dir, "client-cert.pem"),
				"-X", "ssl.key.location=" + filepath.Join(b.pki.dir, "client-key.pem")}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				topic := "kcat-" + strings.ToLower(tc.listener)
				common := append([]string{"-b", b.addrs[tc.listener], "-t", topic}, tc.args...)
				prod := exec.CommandContext(ctx, kcat, append([]string{"-P", "-X", "allow.auto.create.topics=true"}, common...)...)
				prod.Stdin = strings.NewReader("one\ntwo\nthree\n")
				if out, err := prod.CombinedOutput(); err != nil {
					t.Fatalf("kcat -P: %v\n%s", err, out)
				}
				out, err := exec.CommandContext(ctx, kcat, append([]string{"-C", "-o", "beginning", "-c", "3", "-e"}, common...)...).CombinedOutput()
				if err != nil || !strings.Contains(string(out), "three") {
					t.Fatalf("kcat -C: %v\n%s", err, out)
				}
			})
		}
	})
}

// A 3-node cluster whose quorum runs over an SSL controller listener
// (mutual TLS, broker certificates in super.users; the certificates name
// localhost only, while Raft dials IP addresses, so nodes are recognised
// by their principals rather than host names) and whose brokers
// replicate over a secure inter-broker listener: SSL with client
// certificates, or SASL_SSL with PLAIN and the brokers' JAAS credentials.
// An acks=all produce with min.insync.replicas=3 needs every follower to
// have fetched over it. A transaction over the three partitions needs the
// coordinator's markers, and the leaders' verification of transactional
// produces, to reach the other brokers over it too.
func TestSecureClusterReplicates(t *testing.T) {
	const brokerJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
		`username="kb" password="kb-secret" user_kb="kb-secret";`
	for _, tc := range []struct {
		name     string
		protocol string
		sets     []string
	}{
		{"SSL", "SSL", []string{"listener.name.internal.ssl.client.auth=required"}},
		{"SASL_SSL", "SASL_SSL", []string{"sasl.enabled.mechanisms=PLAIN", "sasl.mechanism.inter.broker.protocol=PLAIN",
			"listener.name.internal.plain.sasl.jaas.config=" + brokerJAAS}},
		// The controller listener with SASL_SSL and SCRAM: raft and the
		// controller RPC authenticate as User:kb (later --set wins).
		{"SASL_SSL controller", "SSL", []string{"listener.name.internal.ssl.client.auth=required",
			"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:SSL,CONTROLLER:SASL_SSL",
			"sasl.mechanism.controller.protocol=SCRAM-SHA-512",
			`listener.name.controller.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="kb" password="kb-secret";`,
			"super.users=User:CN=kb1;User:CN=kb2;User:CN=kb3;User:kb"}},
	} {
		t.Run(tc.name, func(t *testing.T) { secureClusterReplicates(t, tc.protocol, tc.sets) })
	}
}

func secureClusterReplicates(t *testing.T, internalProtocol string, extra []string) {
	p := newPKI(t, "cluster CA")
	const n = 3
	ports := testutil.Released(t, 3*n)
	var voters, supers []string
	for i := range n {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, ports[3*i+1]))
		supers = append(supers, fmt.Sprintf("User:CN=kb%d", i+1))
	}
	var brokers []*broker
	for i := range n {
		keystore, _ := p.issueFor(fmt.Sprintf("kb%d", i+1), nil)
		addr := fmt.Sprintf("127.0.0.1:%d", ports[3*i])
		ctrl := fmt.Sprintf("127.0.0.1:%d", ports[3*i+1])
		internal := fmt.Sprintf("127.0.0.1:%d", ports[3*i+2])
		sets := append(append([]string(nil), clusterTiming...),
			"listeners=PLAINTEXT://"+addr+",INTERNAL://"+internal+",CONTROLLER://"+ctrl,
			"advertised.listeners=PLAINTEXT://"+addr+",INTERNAL://"+strings.Replace(internal, "127.0.0.1", "localhost", 1),
			"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:"+internalProtocol+",CONTROLLER:SSL",
			"inter.broker.listener.name=INTERNAL",
			"ssl.keystore.location="+keystore,
			"ssl.truststore.location="+p.caFile(),
			"super.users="+strings.Join(supers, ";"),
			"default.replication.factor=3",
			"min.insync.replicas=3",
			"transaction.state.log.num.partitions=3",
		)
		b := newBroker(t, i+1, t.TempDir(), addr, ctrl, strings.Join(voters, ","), append(sets, extra...)...)
		b.launch()
		brokers = append(brokers, b)
	}
	for _, b := range brokers {
		b.waitReady()
	}
	topic := "secure-replicated"
	createTopicOn(t, brokers[0].addr, topic, 3, 3)
	cl := newClient(t, brokers[1], kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(20))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range 30 {
		r := &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "v%d", i)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("acks=all produce %d: %v", i, err)
		}
	}
	ends := endOffsets(t, brokers[2], topic)
	var total int64
	for _, o := range ends {
		total += o
	}
	if total != 30 {
		t.Fatalf("end offsets %v, want 30 records in all", ends)
	}

	// One committed transaction over every partition, led by all three
	// brokers, and one aborted: a read_committed consumer sees exactly
	// the committed one, so the markers crossed the secure listener.
	txnTopic := "secure-txn"
	createTopicOn(t, brokers[0].addr, txnTopic, 3, 3)
	tp := newClient(t, brokers[0], kgo.TransactionalID("secure-txn"), kgo.DefaultProduceTopic(txnTopic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordDeliveryTimeout(30*time.Second))
	for _, commit := range []kgo.TransactionEndTry{kgo.TryCommit, kgo.TryAbort} {
		if err := tp.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for p := range int32(3) {
			r := &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "commit=%v p%d", bool(commit), p)}
			if err := tp.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("transactional produce to p%d over %s: %v", p, internalProtocol, err)
			}
		}
		if err := tp.EndTransaction(ctx, commit); err != nil {
			t.Fatalf("end transaction (commit %v) over %s: %v", bool(commit), internalProtocol, err)
		}
	}
	rc := newClient(t, brokers[2], kgo.ConsumeTopics(txnTopic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for polls := 0; polls < 30 && len(got) < 3 && ctx.Err() == nil; polls++ {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		rc.PollFetches(pctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		pcancel()
	}
	sort.Strings(got)
	if want := []string{"commit=true p0", "commit=true p1", "commit=true p2"}; !slices.Equal(got, want) {
		t.Fatalf("read_committed read %q, want %q", got, want)
	}

	// kbroker healthcheck reaches the secure inter-broker listener as the
	// broker does.
	args := []string{"healthcheck", "--timeout", "5s"}
	for i := 1; i < len(brokers[0].args); i++ {
		if brokers[0].args[i] == "--set" {
			args = append(args, "--set", brokers[0].args[i+1])
			i++
		}
	}
	if out, err := exec.Command(brokerBin, args...).CombinedOutput(); err != nil {
		t.Fatalf("healthcheck over %s: %v\n%s", internalProtocol, err, out)
	}
}

// writeRequest writes req as a request frame with correlation id corr.
func writeRequest(t *testing.T, w io.Writer, corr int32, req kmsg.Request) {
	t.Helper()
	body := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	body = binary.BigEndian.AppendUint16(body, uint16(req.GetVersion()))
	body = binary.BigEndian.AppendUint32(body, uint32(corr))
	body = binary.BigEndian.AppendUint16(body, uint16(len("itest")))
	body = append(body, "itest"...)
	if req.IsFlexible() {
		body = append(body, 0)
	}
	body = req.AppendTo(body)
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	if _, err := w.Write(append(frame, body...)); err != nil {
		t.Fatalf("write %s: %v", kmsg.NameForKey(req.Key()), err)
	}
}

// readResponseFrame reads one response frame within 10 s; an error means
// the broker closed the connection (or said nothing).
func readResponseFrame(c net.Conn) ([]byte, error) {
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > 1<<20 {
		return nil, fmt.Errorf("response frame of %d bytes", n)
	}
	buf := make([]byte, n)
	_, err := io.ReadFull(c, buf)
	return buf, err
}
