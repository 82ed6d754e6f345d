package security

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// testPKI is a CA with helpers to write PEM stores into a temp dir.
type testPKI struct {
	t   *testing.T
	ca  *CA
	dir string
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	ca, err := NewCA(pkix.Name{CommonName: "test CA"}, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return &testPKI{t: t, ca: ca, dir: t.TempDir()}
}

// issue writes <name>.pem (key + chain) and returns its path.
func (p *testPKI) issue(name string, req CertRequest) string {
	p.t.Helper()
	cert, key, err := p.ca.Issue(req)
	if err != nil {
		p.t.Fatal(err)
	}
	keyPEM, err := KeyPEM(key)
	if err != nil {
		p.t.Fatal(err)
	}
	path := filepath.Join(p.dir, name+".pem")
	if err := os.WriteFile(path, append(keyPEM, CertPEM(cert, p.ca.Cert)...), 0o600); err != nil {
		p.t.Fatal(err)
	}
	return path
}

func (p *testPKI) serverCert(name string) string {
	return p.issue(name, CertRequest{Subject: pkix.Name{CommonName: name}, DNSNames: []string{name, "localhost"},
		IPs: []net.IP{net.ParseIP("127.0.0.1")}, ServerAuth: true, ClientAuth: true})
}

func (p *testPKI) caFile() string {
	path := filepath.Join(p.dir, "ca.pem")
	if err := os.WriteFile(path, CertPEM(p.ca.Cert), 0o644); err != nil {
		p.t.Fatal(err)
	}
	return path
}

// handshake runs a TLS handshake over loopback TCP (buffered, unlike
// net.Pipe: a TLS 1.3 server's late alert must not block) and returns
// both sides' views and errors.
func handshake(t *testing.T, server, client *tls.Config) (tls.ConnectionState, tls.ConnectionState, error, error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	b, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	a, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv, cli := tls.Server(a, server), tls.Client(b, client)
	serr := make(chan error, 1)
	go func() {
		err := srv.HandshakeContext(ctx)
		if err != nil {
			a.Close() // unblock the client
		}
		serr <- err
	}()
	cerr := cli.HandshakeContext(ctx)
	if cerr != nil {
		b.Close()
	}
	se := <-serr
	return srv.ConnectionState(), cli.ConnectionState(), se, cerr
}

func peerCN(cs tls.ConnectionState) string {
	if len(cs.PeerCertificates) == 0 {
		return ""
	}
	return cs.PeerCertificates[0].Subject.CommonName
}

func mustStore(t *testing.T, view map[string]string) *TLSStore {
	t.Helper()
	s, err := NewTLSStore(view, TLSOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func writeTemp(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
