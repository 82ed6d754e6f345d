package security

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestTLSHandshakes(t *testing.T) {
	p := newTestPKI(t)
	ca := p.caFile()
	kb1 := p.serverCert("kb1")
	kb2 := p.serverCert("kb2")
	alice := p.issue("alice", CertRequest{Subject: pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"eng"}}, ClientAuth: true})
	other := newTestPKI(t)
	stranger := other.issue("stranger", CertRequest{Subject: pkix.Name{CommonName: "stranger"}, ClientAuth: true, ServerAuth: true})

	store := func(view map[string]string) *TLSStore { return mustStore(t, view) }
	server := func(clientAuth string) *tls.Config {
		cfg, err := store(map[string]string{"ssl.keystore.location": kb1, "ssl.truststore.location": ca, "ssl.client.auth": clientAuth}).ServerConfig()
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	client := func(keystore, host string, extra ...string) *tls.Config {
		view := map[string]string{"ssl.truststore.location": ca}
		if keystore != "" {
			view["ssl.keystore.location"] = keystore
		}
		for i := 0; i+1 < len(extra); i += 2 {
			view[extra[i]] = extra[i+1]
		}
		return store(view).ClientConfig(host)
	}

	cases := []struct {
		name     string
		server   *tls.Config
		client   *tls.Config
		ok       bool
		clientCN string
	}{
		{"no client auth", server("none"), client("", "kb1"), true, ""},
		{"required with cert", server("required"), client(alice, "kb1"), true, "alice"},
		{"required without cert", server("required"), client("", "kb1"), false, ""},
		{"required, cert from another CA", server("required"), client(stranger, "kb1"), false, ""},
		{"requested without cert", server("requested"), client("", "kb1"), true, ""},
		{"requested with cert", server("requested"), client(kb2, "localhost"), true, "kb2"},
		{"IP SAN", server("none"), client("", "127.0.0.1"), true, ""},
		{"wrong host name", server("none"), client("", "kb3"), false, ""},
		{"wrong host name, identification off", server("none"), client("", "kb3", "ssl.endpoint.identification.algorithm", ""), true, ""},
		{"untrusted server, identification off", server("none"),
			store(map[string]string{"ssl.truststore.location": other.caFile(), "ssl.endpoint.identification.algorithm": ""}).ClientConfig("kb1"), false, ""},
		{"TLS 1.2 client vs 1.3-only server",
			mustServer(t, store(map[string]string{"ssl.keystore.location": kb1, "ssl.enabled.protocols": "TLSv1.3"})),
			client("", "kb1", "ssl.enabled.protocols", "TLSv1.2"), false, ""},
		{"TLS 1.2 with a chosen suite",
			mustServer(t, store(map[string]string{"ssl.keystore.location": kb1, "ssl.enabled.protocols": "TLSv1.2", "ssl.cipher.suites": "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"})),
			client("", "kb1", "ssl.enabled.protocols", "TLSv1.2"), true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			scs, _, serr, cerr := handshake(t, tc.server, tc.client)
			if tc.ok != (serr == nil && cerr == nil) {
				t.Fatalf("server err=%v client err=%v, want ok=%v", serr, cerr, tc.ok)
			}
			if tc.ok && peerCN(scs) != tc.clientCN {
				t.Fatalf("server saw client %q, want %q", peerCN(scs), tc.clientCN)
			}
		})
	}
}

func mustServer(t *testing.T, s *TLSStore) *tls.Config {
	t.Helper()
	cfg, err := s.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestTLSInlinePEM(t *testing.T) {
	p := newTestPKI(t)
	cert, key, err := p.ca.Issue(CertRequest{Subject: pkix.Name{CommonName: "kb1"}, DNSNames: []string{"kb1"}, ServerAuth: true})
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, _ := KeyPEM(key)
	// Inline values as a properties file with '\' continuations yields
	// them: one line, blocks separated by spaces.
	oneLine := func(b []byte) string { return strings.Join(strings.Fields(string(b)), " ") }
	srv := mustStore(t, map[string]string{
		"ssl.keystore.type":              "PEM",
		"ssl.keystore.key":               oneLine(keyPEM),
		"ssl.keystore.certificate.chain": oneLine(CertPEM(cert, p.ca.Cert)),
	})
	cli := mustStore(t, map[string]string{"ssl.truststore.type": "PEM", "ssl.truststore.certificates": string(CertPEM(p.ca.Cert))})
	if _, _, serr, cerr := handshake(t, mustServer(t, srv), cli.ClientConfig("kb1")); serr != nil || cerr != nil {
		t.Fatalf("server %v client %v", serr, cerr)
	}
	if got := len(srv.Certificate().Certificate); got != 2 {
		t.Fatalf("chain has %d certificates, want leaf and CA", got)
	}
}

func TestTLSStartupErrors(t *testing.T) {
	p := newTestPKI(t)
	dir := p.dir
	good := p.serverCert("kb1")
	expired := p.issue("expired", CertRequest{Subject: pkix.Name{CommonName: "old"}, NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-time.Hour)})
	future := p.issue("future", CertRequest{Subject: pkix.Name{CommonName: "new"}, NotBefore: time.Now().Add(time.Hour)})
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	goodPEM, _ := os.ReadFile(good)
	otherPEM, _ := os.ReadFile(p.serverCert("kb2"))
	keyOnly := write("keyonly.pem", string(goodPEM[:strings.Index(string(goodPEM), "-----BEGIN CERTIFICATE")]))
	mismatch := write("mismatch.pem", string(goodPEM[:strings.Index(string(goodPEM), "-----BEGIN CERTIFICATE")])+string(otherPEM[strings.Index(string(otherPEM), "-----BEGIN CERTIFICATE"):]))
	garbage := write("garbage.pem", "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n")
	missing := filepath.Join(dir, "missing.pem")

	cases := []struct {
		name string
		view map[string]string
		want string
	}{
		{"missing keystore", map[string]string{"ssl.keystore.location": missing}, missing},
		{"missing truststore", map[string]string{"ssl.truststore.location": missing}, "ssl.truststore.location"},
		{"no certificate", map[string]string{"ssl.keystore.location": keyOnly}, "no PEM CERTIFICATE"},
		{"malformed certificate", map[string]string{"ssl.truststore.location": garbage}, garbage},
		{"key does not match", map[string]string{"ssl.keystore.location": mismatch}, "matches the private key"},
		{"expired", map[string]string{"ssl.keystore.location": expired}, "expired"},
		{"not yet valid", map[string]string{"ssl.keystore.location": future}, "not valid before"},
		{"encrypted key without password", map[string]string{"ssl.keystore.location": encryptedStore(t, dir, good)}, "ssl.key.password is not set"},
		{"wrong password", map[string]string{"ssl.keystore.location": encryptedStore(t, dir, good), "ssl.key.password": "wrong"}, "wrong ssl.key.password"},
		{"JKS", map[string]string{"ssl.keystore.type": "JKS", "ssl.keystore.location": good}, "ssl.keystore.type=JKS is not supported: kbroker reads PEM only (ssl.keystore.type=PEM); convert with keytool -importkeystore"},
		{"PKCS12 keystore", map[string]string{"ssl.keystore.type": "PKCS12", "ssl.keystore.location": good}, "ssl.keystore.type=PKCS12 is not supported: kbroker reads PEM only (ssl.keystore.type=PEM); convert with openssl pkcs12"},
		{"JKS truststore", map[string]string{"ssl.truststore.type": "JKS"}, "ssl.truststore.type=JKS is not supported: kbroker reads PEM only (ssl.truststore.type=PEM); convert with keytool -exportcert -rfc"},
		{"store password", map[string]string{"ssl.keystore.location": good, "ssl.keystore.password": "x"}, "ssl.keystore.password"},
		{"key without chain", map[string]string{"ssl.keystore.key": "x"}, "together"},
		{"location and inline", map[string]string{"ssl.keystore.location": good, "ssl.keystore.key": "x", "ssl.keystore.certificate.chain": "y"}, "cannot be combined"},
		{"TLSv1.1", map[string]string{"ssl.enabled.protocols": "TLSv1.2,TLSv1.1"}, "TLSv1.1 is insecure"},
		{"unknown protocol", map[string]string{"ssl.enabled.protocols": "TLSv9"}, "unknown protocol"},
		{"unknown cipher", map[string]string{"ssl.cipher.suites": "TLS_FOO"}, "unknown cipher suite"},
		{"insecure cipher", map[string]string{"ssl.cipher.suites": "TLS_RSA_WITH_RC4_128_SHA"}, "insecure"},
		{"client auth", map[string]string{"ssl.client.auth": "always"}, "ssl.client.auth"},
		{"endpoint identification", map[string]string{"ssl.endpoint.identification.algorithm": "ldap"}, "https or empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewTLSStore(tc.view, TLSOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err=%v, want it to mention %q", err, tc.want)
			}
		})
	}
	if _, err := mustStore(t, map[string]string{}).ServerConfig(); err != ErrNoKeystore {
		t.Fatalf("ServerConfig without keystore: %v", err)
	}
}

func TestListenerProps(t *testing.T) {
	props := map[string]string{
		"ssl.client.auth":                                       "none",
		"ssl.keystore.location":                                 "/plain.pem",
		"listener.name.internal.ssl.client.auth":                "required",
		"listener.name.external.ssl.keystore.location":          "/external.pem",
		"listener.name.internal.scram-sha-256.sasl.jaas.config": "internal-scram",
		"sasl.jaas.config":                                      "global",
	}
	in := ListenerProps(props, "INTERNAL")
	if in["ssl.client.auth"] != "required" || in["ssl.keystore.location"] != "/plain.pem" {
		t.Fatalf("INTERNAL view: %v", in)
	}
	for k := range in {
		if strings.HasPrefix(k, "listener.name.") {
			t.Fatalf("view keeps %s", k)
		}
	}
	if v, _ := MechanismProp(in, "SCRAM-SHA-256", "sasl.jaas.config"); v != "internal-scram" {
		t.Fatalf("mechanism override: %q", v)
	}
	if v, _ := MechanismProp(in, "PLAIN", "sasl.jaas.config"); v != "global" {
		t.Fatalf("mechanism fallback: %q", v)
	}
	ex := ListenerProps(props, "external")
	if ex["ssl.client.auth"] != "none" || ex["ssl.keystore.location"] != "/external.pem" {
		t.Fatalf("EXTERNAL view: %v", ex)
	}
}
