package security

import (
	"context"
	"crypto/x509/pkix"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/kbroker/kbroker/security/sasl"
)

// TestListenerSecurityWithKcat checks librdkafka (through kcat) against
// the listener security: SASL_SSL with SCRAM and SSL with a client
// certificate, using PEM files as kcat takes them.
func TestListenerSecurityWithKcat(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat not installed (apt-get install kcat); the franz-go and sarama tests cover the same paths")
	}
	p := newTestPKI(t)
	ca := p.caFile()
	props := map[string]string{
		"ssl.keystore.location":                                p.serverCert("kb1"),
		"ssl.truststore.location":                              ca,
		"listener.name.sasl_ssl.sasl.enabled.mechanisms":       "SCRAM-SHA-512",
		"listener.name.ssl.ssl.client.auth":                    "required",
		"listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config":  `org.apache.kafka.common.security.plain.PlainLoginModule required user_bob="bob-secret";`,
	}
	creds := sasl.ScramCredentials{}
	_, cred, err := sasl.ParseAddScram("SCRAM-SHA-512=[name=alice,password=alice-secret,iterations=8192]")
	if err != nil {
		t.Fatal(err)
	}
	creds.Add("alice", cred)
	_, cred, err = sasl.ParseAddScram("SCRAM-SHA-256=[name=carol,password=carol-secret]")
	if err != nil {
		t.Fatal(err)
	}
	creds.Add("carol", cred)
	broker := func(name string) *miniBroker {
		sec, err := NewListenerSecurity(props, name, name, creds, TLSOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return startMiniBroker(t, sec)
	}

	// kcat wants the client key and certificate as separate files.
	cert, key, err := p.ca.Issue(CertRequest{Subject: pkix.Name{CommonName: "alice", Organization: []string{"acme"}}, ClientAuth: true})
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, _ := KeyPEM(key)
	keyFile, certFile := writeTemp(t, p.dir, "alice-key.pem", keyPEM), writeTemp(t, p.dir, "alice-cert.pem", CertPEM(cert))

	cases := []struct {
		name      string
		listener  string // a fresh broker per case: librdkafka may connect twice
		args      []string
		principal string // "" = must fail
	}{
		{"SASL_SSL SCRAM-SHA-512", "SASL_SSL", []string{"-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=SCRAM-SHA-512",
			"-X", "sasl.username=alice", "-X", "sasl.password=alice-secret", "-X", "ssl.ca.location=" + ca}, "User:alice"},
		{"SASL_SSL wrong password", "SASL_SSL", []string{"-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=SCRAM-SHA-512",
			"-X", "sasl.username=alice", "-X", "sasl.password=nope", "-X", "ssl.ca.location=" + ca}, ""},
		{"SSL client certificate", "SSL", []string{"-X", "security.protocol=SSL", "-X", "ssl.ca.location=" + ca,
			"-X", "ssl.certificate.location=" + certFile, "-X", "ssl.key.location=" + keyFile}, "User:CN=alice,O=acme"},
		{"SASL_PLAINTEXT PLAIN", "SASL_PLAINTEXT", []string{"-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=PLAIN",
			"-X", "sasl.username=bob", "-X", "sasl.password=bob-secret"}, "User:bob"},
		{"SASL_PLAINTEXT SCRAM-SHA-256", "SASL_PLAINTEXT", []string{"-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=SCRAM-SHA-256",
			"-X", "sasl.username=carol", "-X", "sasl.password=carol-secret"}, "User:carol"},
		{"SSL without client certificate", "SSL", []string{"-X", "security.protocol=SSL", "-X", "ssl.ca.location=" + ca}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			// A failing case runs until kcat's metadata timeout (-m).
			timeout := "10"
			if tc.principal == "" {
				timeout = "2"
			}
			b := broker(tc.listener)
			args := append([]string{"-L", "-b", b.addr(), "-m", timeout}, tc.args...)
			out, err := exec.CommandContext(ctx, kcat, args...).CombinedOutput()
			if tc.principal == "" {
				if err == nil {
					t.Fatalf("kcat succeeded:\n%s", out)
				}
				return
			}
			if err != nil || !strings.Contains(string(out), "1 brokers") {
				t.Fatalf("kcat: %v\n%s", err, out)
			}
			if got := <-b.principals; got != tc.principal {
				t.Fatalf("principal %s, want %s", got, tc.principal)
			}
		})
	}
}
