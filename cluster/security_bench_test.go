package cluster

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/testutil"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/security"
)

// BenchmarkSecurity compares acks=all produce and consume throughput
// over PLAINTEXT and SASL_SSL (TLS + PLAIN) on one node in the same run:
//
//	go test -run '^$' -bench BenchmarkSecurity -benchtime 200000x ./cluster/
//
// The ratio of the MB/s figures is the cost of TLS on this machine.
func BenchmarkSecurity(b *testing.B) {
	dir := b.TempDir()
	ca, err := security.NewCA(pkix.Name{CommonName: "bench CA"}, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	cert, key, err := ca.Issue(security.CertRequest{Subject: pkix.Name{CommonName: "kb1"},
		IPs: []net.IP{net.ParseIP("127.0.0.1")}, ServerAuth: true})
	if err != nil {
		b.Fatal(err)
	}
	keyPEM, _ := security.KeyPEM(key)
	keystore := filepath.Join(dir, "kb1.pem")
	if err := os.WriteFile(keystore, append(keyPEM, security.CertPEM(cert, ca.Cert)...), 0o600); err != nil {
		b.Fatal(err)
	}
	ctrl := strconv.Itoa(testutil.Released(b, 1)[0])
	cfg, err := config.Load("", nil, []string{
		"node.id=1",
		"listeners=PLAINTEXT://127.0.0.1:0,SECURE://127.0.0.1:0,CONTROLLER://127.0.0.1:" + ctrl,
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SECURE:SASL_SSL,CONTROLLER:PLAINTEXT",
		"inter.broker.listener.name=PLAINTEXT",
		"controller.quorum.voters=1@127.0.0.1:" + ctrl,
		"log.dirs=" + filepath.Join(dir, "data"),
		"auto.create.topics.enable=true",
		"ssl.keystore.location=" + keystore,
		"sasl.enabled.mechanisms=PLAIN",
		"listener.name.secure.plain.sasl.jaas.config=" + testPlainJAAS,
	})
	if err != nil {
		b.Fatal(err)
	}
	n, err := NewNode(cfg, testLogger(b))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			b.Errorf("node shutdown: %v", err)
		}
	}()
	<-n.Ready()
	plainAddr, _ := n.Addr("PLAINTEXT")
	secureAddr, _ := n.Addr("SECURE")
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)

	// Random and uncompressed, so every byte crosses TLS.
	value := make([]byte, 1024)
	rand.Read(value)
	listeners := []struct {
		name string
		opts []kgo.Opt
	}{
		{"PLAINTEXT", []kgo.Opt{kgo.SeedBrokers(plainAddr)}},
		{"SASL_SSL", []kgo.Opt{kgo.SeedBrokers(secureAddr), kgo.DialTLSConfig(&tls.Config{RootCAs: pool}),
			kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())}},
	}
	newClient := func(b *testing.B, opts []kgo.Opt, more ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append(append(opts, kgo.AllowAutoTopicCreation(), kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.ProducerLinger(time.Millisecond), kgo.ProducerBatchCompression(kgo.NoCompression())), more...)...)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(cl.Close)
		return cl
	}
	for _, l := range listeners {
		b.Run("produce/"+l.name, func(b *testing.B) {
			cl := newClient(b, l.opts)
			produceN(ctx, b, cl, "bench-"+l.name, value, 1) // creates the topic
			b.SetBytes(int64(len(value)))
			b.ResetTimer()
			produceN(ctx, b, cl, "bench-"+l.name, value, b.N)
		})
	}
	for _, l := range listeners {
		b.Run("consume/"+l.name, func(b *testing.B) {
			topic := "bench-consume-" + l.name + "-" + strconv.Itoa(b.N)
			produceN(ctx, b, newClient(b, l.opts), topic, value, b.N)
			cl := newClient(b, l.opts, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			b.SetBytes(int64(len(value)))
			b.ResetTimer()
			for got := 0; got < b.N; {
				fs := cl.PollFetches(ctx)
				if err := fs.Err(); err != nil {
					b.Fatal(err)
				}
				got += fs.NumRecords()
			}
		})
	}
}

// produceN produces n records of value to topic with acks=all and waits
// for all of them.
func produceN(ctx context.Context, b *testing.B, cl *kgo.Client, topic string, value []byte, n int) {
	errs := make(chan error, 1)
	for range n {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
}
