package admincli

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kbroker/kbroker/security"
)

func TestParseProperties(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       map[string]string
		err        string
	}{
		{name: "separators and comments", text: "# c\n! c\na=1\nb : 2\nc 3\n  d=  spaced  \n\ne=",
			want: map[string]string{"a": "1", "b": "2", "c": "3", "d": "spaced", "e": ""}},
		{name: "continuation", text: "k=one \\\n    two\nl=x", want: map[string]string{"k": "one two", "l": "x"}},
		{name: "escapes", text: `k\=x=a\\b\:c`, want: map[string]string{"k=x": `a\b:c`}},
		{name: "crlf", text: "a=1\r\nb=2\r\n", want: map[string]string{"a": "1", "b": "2"}},
		{name: "duplicate", text: "sasl.password=a\nsasl.password=b", err: `key "sasl.password" given twice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseProperties(tc.text)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

func TestParseCommandConfig(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	writePKI(t, dir, "localhost", "admin")
	ca := filepath.Join(dir, "ca.pem")
	keystore := filepath.Join(dir, "admin.pem")
	cert, key := filepath.Join(dir, "admin-cert.pem"), filepath.Join(dir, "admin-key.pem")
	const secret = "s3cr3t-Pa55"

	type want struct {
		protocol, mechanism, user, password string
		tls, roots, skipHostname            bool
		certs                               int
	}
	for _, tc := range []struct {
		name, text string
		want       want
		err        string
	}{
		{name: "empty is plaintext", text: "", want: want{protocol: "PLAINTEXT"}},
		{name: "plain jaas", text: "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n" +
			`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="` + secret + `";`,
			want: want{protocol: "SASL_PLAINTEXT", mechanism: "PLAIN", user: "alice", password: secret}},
		{name: "scram jaas continued, escaped quote", text: "security.protocol=sasl_plaintext\nsasl.mechanism=SCRAM-SHA-512\n" +
			"sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n  username=\"bob\" \\\n  password=\"a\\\\\"b\";",
			want: want{protocol: "SASL_PLAINTEXT", mechanism: "SCRAM-SHA-512", user: "bob", password: `a"b`}},
		{name: "librdkafka names", text: "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\nsasl.username=carol\nsasl.password=" + secret,
			want: want{protocol: "SASL_PLAINTEXT", mechanism: "SCRAM-SHA-256", user: "carol", password: secret}},
		{name: "sasl_ssl with truststore", text: "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.username=u\nsasl.password=p\nssl.truststore.type=PEM\nssl.truststore.location=" + ca,
			want: want{protocol: "SASL_SSL", mechanism: "PLAIN", user: "u", password: "p", tls: true, roots: true}},
		{name: "ssl mutual keystore, no hostname check", text: "security.protocol=SSL\nssl.ca.location=" + ca + "\nssl.keystore.location=" + keystore + "\nssl.endpoint.identification.algorithm=",
			want: want{protocol: "SSL", tls: true, roots: true, skipHostname: true, certs: 1}},
		{name: "ssl cert and key files", text: "security.protocol=SSL\nssl.certificate.location=" + cert + "\nssl.key.location=" + key,
			want: want{protocol: "SSL", tls: true, certs: 1}},
		{name: "ssl system roots", text: "security.protocol=SSL", want: want{protocol: "SSL", tls: true}},

		{name: "unknown key", text: "security.protocol=SSL\nssl.keystore.password=" + secret, err: `unknown key "ssl.keystore.password"`},
		{name: "a bare password line", text: "security.protocol=SSL\n" + secret, err: "not shown"},
		{name: "bad protocol", text: "security.protocol=KERBEROS", err: "security.protocol"},
		{name: "no mechanism", text: "security.protocol=SASL_PLAINTEXT\nsasl.username=u\nsasl.password=" + secret, err: "sasl.mechanism is required"},
		{name: "gssapi", text: "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=GSSAPI", err: "sasl.mechanism"},
		{name: "no credentials", text: "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN", err: "sasl.jaas.config, or sasl.username"},
		{name: "username without password", text: "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username=u", err: "sasl.jaas.config, or sasl.username"},
		{name: "jaas module mismatch", text: "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n" +
			`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="` + secret + `";`, err: "needs ScramLoginModule"},
		{name: "jaas no semicolon", text: "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n" +
			`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="` + secret + `"`, err: "sasl.jaas.config"},
		{name: "jaas unterminated", text: "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n" +
			`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="` + secret + `;`, err: "unterminated"},
		{name: "jaas without password", text: "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n" +
			`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="u";`, err: "username and password are required"},
		{name: "jaas and username", text: "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username=u\n" +
			`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="` + secret + `";`, err: "both given"},
		{name: "sasl key without sasl", text: "security.protocol=SSL\nsasl.password=" + secret, err: "sasl.password is set but security.protocol is SSL"},
		{name: "ssl key without ssl", text: "ssl.ca.location=" + ca, err: "ssl.ca.location is set but security.protocol is PLAINTEXT"},
		{name: "jks truststore", text: "security.protocol=SSL\nssl.truststore.type=JKS\nssl.truststore.location=x.jks", err: "only PEM"},
		{name: "missing ca file", text: "security.protocol=SSL\nssl.ca.location=" + filepath.Join(dir, "nope.pem"), err: "ssl.ca.location"},
		{name: "ca file without certificate", text: "security.protocol=SSL\nssl.truststore.location=" + key, err: "no PEM certificate"},
		{name: "cert without key", text: "security.protocol=SSL\nssl.certificate.location=" + cert, err: "go together"},
		{name: "keystore without key", text: "security.protocol=SSL\nssl.keystore.location=" + ca, err: "ssl.keystore.location"},
		{name: "bad endpoint algorithm", text: "security.protocol=SSL\nssl.endpoint.identification.algorithm=dns", err: "ssl.endpoint.identification.algorithm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseCommandConfig(tc.text, os.ReadFile)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("error %q quotes the password", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			g := want{protocol: got.Protocol, mechanism: got.Mechanism, user: got.User, password: got.Password, tls: got.TLS != nil}
			if got.TLS != nil {
				g.roots = got.TLS.RootCAs != nil
				g.skipHostname = got.TLS.InsecureSkipVerify && got.TLS.VerifyConnection != nil
				g.certs = len(got.TLS.Certificates)
			}
			if g != tc.want {
				t.Fatalf("got %+v, want %+v", g, tc.want)
			}
			if n := len(got.opts()); n != btoi(g.tls)+btoi(g.mechanism != "") {
				t.Fatalf("%d client options", n)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// With ssl.endpoint.identification.algorithm empty, the broker's chain
// is still checked against the trust store; only the name is not.
func TestCommandConfigSkipsOnlyTheHostName(t *testing.T) {
	ours, theirs := filepath.Join(t.TempDir(), "ours"), filepath.Join(t.TempDir(), "theirs")
	for _, d := range []string{ours, theirs} {
		writePKI(t, d, "kb1", "admin")
	}
	sec, err := parseCommandConfig("security.protocol=SSL\nssl.ca.location="+filepath.Join(ours, "ca.pem")+"\nssl.endpoint.identification.algorithm=", os.ReadFile)
	if err != nil {
		t.Fatal(err)
	}
	peer := func(dir string) tls.ConnectionState {
		pair, err := tls.LoadX509KeyPair(filepath.Join(dir, "kb1.pem"), filepath.Join(dir, "kb1.pem"))
		if err != nil {
			t.Fatal(err)
		}
		var cs tls.ConnectionState
		for _, der := range pair.Certificate {
			c, err := x509.ParseCertificate(der)
			if err != nil {
				t.Fatal(err)
			}
			cs.PeerCertificates = append(cs.PeerCertificates, c)
		}
		return cs
	}
	if err := sec.TLS.VerifyConnection(peer(ours)); err != nil {
		t.Fatalf("our CA's certificate for another name: %v", err)
	}
	if err := sec.TLS.VerifyConnection(peer(theirs)); err == nil {
		t.Fatal("a certificate of another CA was accepted")
	}
	if err := sec.TLS.VerifyConnection(tls.ConnectionState{}); err == nil {
		t.Fatal("no certificate was accepted")
	}
}

// writePKI writes into dir, as "kbroker tls init --hosts host --client
// client" lays them out, the files a --command-config names: ca.pem, and
// for host (a server certificate for that name) and client <name>.pem
// (key and chain), <name>-key.pem and <name>-cert.pem (the chain).
func writePKI(t *testing.T, dir, host, client string) {
	t.Helper()
	ca, err := security.NewCA(pkix.Name{CommonName: "admincli test CA"}, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("ca.pem", security.CertPEM(ca.Cert))
	for _, req := range []security.CertRequest{
		{Subject: pkix.Name{CommonName: host}, DNSNames: []string{host}, ServerAuth: true, ClientAuth: true},
		{Subject: pkix.Name{CommonName: client}, ClientAuth: true},
	} {
		cert, key, err := ca.Issue(req)
		if err != nil {
			t.Fatal(err)
		}
		keyPEM, err := security.KeyPEM(key)
		if err != nil {
			t.Fatal(err)
		}
		chain := security.CertPEM(cert, ca.Cert)
		name := req.Subject.CommonName
		write(name+".pem", append(slices.Clone(keyPEM), chain...))
		write(name+"-key.pem", keyPEM)
		write(name+"-cert.pem", chain)
	}
}
