package security

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kbroker/kbroker/security/sasl"
)

// miniBroker is the smallest Kafka connection loop that exercises
// ListenerSecurity the way the broker's connection layer is meant to:
// TLS handshake, then SASL (framed or raw v0) before anything else, then
// requests with the connection's principal. It answers ApiVersions, the
// SASL requests and Metadata.
type miniBroker struct {
	t          *testing.T
	ln         net.Listener
	sec        *ListenerSecurity
	principals chan string
	rawTokens  atomic.Int64 // SASL tokens received without framing (v0)
}

func startMiniBroker(t *testing.T, sec *ListenerSecurity) *miniBroker {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if cfg := sec.ServerTLS(); cfg != nil {
		ln = tls.NewListener(ln, cfg)
	}
	b := &miniBroker{t: t, ln: ln, sec: sec, principals: make(chan string, 16)}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				stop := context.AfterFunc(ctx, func() { c.Close() })
				defer stop()
				b.serve(ctx, c)
			}()
		}
	}()
	t.Cleanup(func() {
		cancel()
		ln.Close()
		wg.Wait()
	})
	return b
}

func (b *miniBroker) addr() string { return b.ln.Addr().String() }

func readFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > 1<<20 { // never let the peer size an allocation
		return nil, fmt.Errorf("frame of %d bytes", n)
	}
	buf := make([]byte, n)
	_, err := io.ReadFull(r, buf)
	return buf, err
}

func writeFrame(w io.Writer, body []byte) error {
	out := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	_, err := w.Write(append(out, body...))
	return err
}

func (b *miniBroker) serve(ctx context.Context, c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	var state *tls.ConnectionState
	if tc, ok := c.(*tls.Conn); ok {
		if err := tc.HandshakeContext(ctx); err != nil {
			return
		}
		st := tc.ConnectionState()
		state = &st
	}
	cs, err := b.sec.NewConn(state)
	if err != nil {
		return
	}
	for {
		frame, err := readFrame(c)
		if err != nil {
			return
		}
		if cs.SASL != nil && cs.SASL.ExpectRawToken() {
			b.rawTokens.Add(1)
			reply, err := cs.SASL.AuthenticateRaw(ctx, frame)
			if err != nil || writeFrame(c, reply) != nil {
				return
			}
			continue
		}
		if len(frame) < 10 {
			return
		}
		key := int16(binary.BigEndian.Uint16(frame[0:]))
		version := int16(binary.BigEndian.Uint16(frame[2:]))
		corr := binary.BigEndian.Uint32(frame[4:])
		clientIDLen := int(int16(binary.BigEndian.Uint16(frame[8:])))
		rest := frame[10:]
		if clientIDLen > 0 {
			if clientIDLen > len(rest) {
				return
			}
			rest = rest[clientIDLen:]
		}
		req := kmsg.RequestForKey(key)
		if req == nil {
			return
		}
		req.SetVersion(version)
		if req.IsFlexible() {
			if len(rest) == 0 || rest[0] != 0 { // header tagged fields: none expected
				return
			}
			rest = rest[1:]
		}
		if err := req.ReadFrom(rest); err != nil {
			return
		}
		if !cs.Authenticated() && !AllowedBeforeAuth(key) {
			return // Kafka closes a connection that skips authentication
		}
		var resp kmsg.Response
		closeAfter := false
		switch r := req.(type) {
		case *kmsg.ApiVersionsRequest:
			av := kmsg.NewPtrApiVersionsResponse()
			for _, k := range []struct{ key, max int16 }{{18, 3}, {17, 1}, {36, 2}, {3, 9}} {
				av.ApiKeys = append(av.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: k.key, MaxVersion: k.max})
			}
			resp = av
		case *kmsg.SASLHandshakeRequest:
			resp, closeAfter = cs.SASL.Handshake(r)
		case *kmsg.SASLAuthenticateRequest:
			resp, closeAfter = cs.SASL.Authenticate(ctx, r)
		case *kmsg.MetadataRequest:
			select {
			case b.principals <- cs.Principal().String():
			default: // nobody is counting this one
			}
			md := kmsg.NewPtrMetadataResponse()
			host, port, _ := net.SplitHostPort(b.addr())
			p, _ := strconv.Atoi(port)
			md.Brokers = []kmsg.MetadataResponseBroker{{NodeID: 1, Host: host, Port: int32(p)}}
			md.ControllerID = 1
			resp = md
		default:
			return
		}
		resp.SetVersion(version)
		out := binary.BigEndian.AppendUint32(nil, corr)
		if resp.IsFlexible() && key != kmsg.ApiVersions.Int16() {
			out = append(out, 0) // response header tagged fields
		}
		if writeFrame(c, resp.AppendTo(out)) != nil || closeAfter {
			return
		}
	}
}

func TestListenerSecurityWithClients(t *testing.T) {
	p := newTestPKI(t)
	ca := p.caFile()
	kb1 := p.serverCert("kb1")
	alice := p.issue("alice", CertRequest{Subject: pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"eng"}}, ClientAuth: true})

	scramCreds := sasl.ScramCredentials{}
	_, cred, err := sasl.ParseAddScram("SCRAM-SHA-256=[name=alice,password=alice-secret]")
	if err != nil {
		t.Fatal(err)
	}
	scramCreds.Add("alice", cred)
	props := map[string]string{
		"ssl.keystore.location":                                kb1,
		"ssl.truststore.location":                              ca,
		"listener.name.sasl_ssl.sasl.enabled.mechanisms":       "SCRAM-SHA-256,PLAIN",
		"listener.name.sasl_ssl.plain.sasl.jaas.config":        `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret";`,
		"listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config":  `org.apache.kafka.common.security.plain.PlainLoginModule required user_bob="bob-secret";`,
		"listener.name.ssl.ssl.client.auth":                    "required",
		"listener.name.ssl.ssl.principal.mapping.rules":        "RULE:^CN=([^,]+),OU=eng$/$1@eng/,DEFAULT",
	}
	listener := func(name string) *miniBroker {
		sec, err := NewListenerSecurity(props, name, name, scramCreds, TLSOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return startMiniBroker(t, sec)
	}
	saslSSL, saslPlain, ssl := listener("SASL_SSL"), listener("SASL_PLAINTEXT"), listener("SSL")
	clientTLS := func(keystore string) *tls.Config {
		view := map[string]string{"ssl.truststore.location": ca}
		if keystore != "" {
			view["ssl.keystore.location"] = keystore
		}
		return mustStore(t, view).ClientConfig("kb1")
	}

	metadata := func(b *miniBroker, opts ...kgo.Opt) error {
		cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(b.addr()), kgo.RetryTimeout(2*time.Second), kgo.RequestRetries(0))...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err = cl.Request(ctx, kmsg.NewPtrMetadataRequest())
		return err
	}
	cases := []struct {
		name      string
		broker    *miniBroker
		opts      []kgo.Opt
		principal string // "" = must fail
		wantErr   error
	}{
		{"SASL_SSL SCRAM", saslSSL, []kgo.Opt{kgo.DialTLSConfig(clientTLS("")), kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism())}, "User:alice", nil},
		{"SASL_SSL PLAIN", saslSSL, []kgo.Opt{kgo.DialTLSConfig(clientTLS("")), kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism())}, "User:admin", nil},
		{"SASL_SSL bad SCRAM password", saslSSL, []kgo.Opt{kgo.DialTLSConfig(clientTLS("")), kgo.SASL(scram.Auth{User: "alice", Pass: "x"}.AsSha256Mechanism())}, "", kerr.SaslAuthenticationFailed},
		{"SASL_SSL disabled mechanism", saslSSL, []kgo.Opt{kgo.DialTLSConfig(clientTLS("")), kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism())}, "", kerr.UnsupportedSaslMechanism},
		{"SASL_PLAINTEXT PLAIN", saslPlain, []kgo.Opt{kgo.SASL(plain.Auth{User: "bob", Pass: "bob-secret"}.AsMechanism())}, "User:bob", nil},
		{"SASL_PLAINTEXT without SASL", saslPlain, nil, "", nil},
		{"SSL client certificate, mapped", ssl, []kgo.Opt{kgo.DialTLSConfig(clientTLS(alice))}, "User:alice@eng", nil},
		{"SSL without client certificate", ssl, []kgo.Opt{kgo.DialTLSConfig(clientTLS(""))}, "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := metadata(tc.broker, tc.opts...)
			if tc.principal == "" {
				if err == nil {
					t.Fatal("request succeeded")
				}
				if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
					t.Fatalf("err=%v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := <-tc.broker.principals; got != tc.principal {
				t.Fatalf("principal %s, want %s", got, tc.principal)
			}
		})
	}

	// sarama with SaslHandshake v0: the tokens go raw, without
	// SaslAuthenticate framing.
	t.Run("sarama SASL v0 PLAIN", func(t *testing.T) {
		cfg := sarama.NewConfig()
		cfg.ApiVersionsRequest = false
		cfg.Net.SASL.Enable = true
		cfg.Net.SASL.Version = sarama.SASLHandshakeV0
		cfg.Net.SASL.User, cfg.Net.SASL.Password = "bob", "bob-secret"
		cfg.Metadata.Retry.Max = 0
		cl, err := sarama.NewClient([]string{saslPlain.addr()}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		if got := <-saslPlain.principals; got != "User:bob" {
			t.Fatalf("principal %s", got)
		}
		if n := saslPlain.rawTokens.Load(); n != 1 {
			t.Fatalf("%d raw SASL tokens, want the one PLAIN message", n)
		}
	})
}

func TestNewListenerSecurityErrors(t *testing.T) {
	for _, tc := range []struct {
		protocol string
		props    map[string]string
	}{
		{"SSL", map[string]string{}}, // no keystore
		{"SASL_PLAINTEXT", map[string]string{}},
		{"SASL_PLAINTEXT", map[string]string{"sasl.enabled.mechanisms": "GSSAPI"}},
		{"SASL_PLAINTEXT", map[string]string{"sasl.enabled.mechanisms": "PLAIN"}}, // no JAAS users
		{"SASL_PLAINTEXT", map[string]string{"sasl.enabled.mechanisms": "SCRAM-SHA-256"}},
		{"SSL", map[string]string{"ssl.keystore.location": "/nonexistent.pem"}},
		{"QUIC", map[string]string{}},
	} {
		if _, err := NewListenerSecurity(tc.props, "L", tc.protocol, nil, TLSOptions{}); err == nil {
			t.Errorf("%s %v accepted", tc.protocol, tc.props)
		}
	}
}

func TestInterBrokerSASL(t *testing.T) {
	view := ListenerProps(map[string]string{
		"sasl.mechanism.inter.broker.protocol":                  "SCRAM-SHA-512",
		"listener.name.internal.scram-sha-512.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="kb" password="kb-secret";`,
	}, "INTERNAL")
	newSession, err := InterBrokerSASL(view)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := newSession().(*sasl.ScramClient)
	if !ok || c.User != "kb" || c.Password != "kb-secret" || c.Mech.Name() != "SCRAM-SHA-512" {
		t.Fatalf("%#v", newSession())
	}
	if _, err := InterBrokerSASL(map[string]string{"sasl.mechanism.inter.broker.protocol": "PLAIN"}); err == nil {
		t.Fatal("no JAAS accepted")
	}
}
