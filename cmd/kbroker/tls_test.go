package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kbroker/kbroker/security"
)

func TestTLSInit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	var stdout, stderr bytes.Buffer
	if code := tlsCmd([]string{"init", "--dir", dir, "--hosts", "kb1,kb2,localhost,10.0.0.7", "--days", "30"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, name := range []string{"ca.pem", "ca-key.pem", "kb1.pem", "kb1-key.pem", "kb1-cert.pem", "localhost.pem", "10.0.0.7.pem", "admin.pem", "admin-cert.pem"} {
		if !strings.Contains(stdout.String(), filepath.Join(dir, name)) {
			t.Errorf("output does not list %s:\n%s", name, stdout.String())
		}
	}
	for name, want := range map[string]os.FileMode{"ca.pem": 0o644, "ca-key.pem": 0o600, "kb1.pem": 0o600, "kb1-key.pem": 0o600, "kb1-cert.pem": 0o644, "admin.pem": 0o600} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s mode %v, want %v", name, fi.Mode().Perm(), want)
		}
	}

	ca := filepath.Join(dir, "ca.pem")
	server := func(keystore map[string]string) *tls.Config {
		keystore["ssl.truststore.location"] = ca
		keystore["ssl.client.auth"] = "required"
		s, err := security.NewTLSStore(keystore, security.TLSOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := s.ServerConfig()
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Certificate().Leaf.NotAfter; got.Before(time.Now().Add(29*24*time.Hour)) || got.After(time.Now().Add(31*24*time.Hour)) {
			t.Errorf("certificate valid until %v, want about 30 days", got)
		}
		return cfg
	}
	client := func(keystore, host string) *tls.Config {
		s, err := security.NewTLSStore(map[string]string{"ssl.keystore.location": filepath.Join(dir, keystore), "ssl.truststore.location": ca}, security.TLSOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s.ClientConfig(host)
	}
	keyFile, _ := os.ReadFile(filepath.Join(dir, "kb2-key.pem"))
	certFile, _ := os.ReadFile(filepath.Join(dir, "kb2-cert.pem"))

	cases := []struct {
		name      string
		server    *tls.Config
		client    *tls.Config
		principal string
	}{
		{"admin to kb1", server(map[string]string{"ssl.keystore.location": filepath.Join(dir, "kb1.pem")}), client("admin.pem", "kb1"), "User:CN=admin"},
		{"kb1 to kb2 from separate files", server(map[string]string{"ssl.keystore.key": string(keyFile), "ssl.keystore.certificate.chain": string(certFile)}), client("kb1.pem", "kb2"), "User:CN=kb1"},
		{"localhost by IP", server(map[string]string{"ssl.keystore.location": filepath.Join(dir, "localhost.pem")}), client("admin.pem", "127.0.0.1"), "User:CN=admin"},
		{"IP host", server(map[string]string{"ssl.keystore.location": filepath.Join(dir, "10.0.0.7.pem")}), client("admin.pem", "10.0.0.7"), "User:CN=admin"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			state, err := tlsRoundTrip(tc.server, tc.client)
			if err != nil {
				t.Fatal(err)
			}
			p, err := security.CertificatePrincipal(state.PeerCertificates, nil)
			if err != nil || p.String() != tc.principal {
				t.Fatalf("principal %s (%v), want %s", p, err, tc.principal)
			}
		})
	}
	// kb1's certificate does not name localhost (no --san-localhost).
	if _, err := tlsRoundTrip(server(map[string]string{"ssl.keystore.location": filepath.Join(dir, "kb1.pem")}), client("admin.pem", "localhost")); err == nil {
		t.Error("kb1's certificate accepted for localhost")
	}

	// A second run keeps the existing CA unless forced.
	stdout.Reset()
	stderr.Reset()
	if code := tlsCmd([]string{"init", "--dir", dir, "--hosts", "kb1"}, &stdout, &stderr); code == 0 || !strings.Contains(stderr.String(), "exists") {
		t.Fatalf("second run: exit %d, %s", code, stderr.String())
	}
	if code := tlsCmd([]string{"init", "--dir", dir, "--hosts", "kb1", "--force"}, &stdout, &stderr); code != 0 {
		t.Fatalf("forced run: exit %d, %s", code, stderr.String())
	}
}

func TestTLSInitUsage(t *testing.T) {
	for _, args := range [][]string{
		{}, {"init"}, {"init", "--dir", t.TempDir()}, {"init", "--hosts", "a"},
		{"init", "--dir", t.TempDir(), "--hosts", "a,a"}, {"init", "--dir", t.TempDir(), "--hosts", "../x"},
		{"init", "--dir", t.TempDir(), "--hosts", "a", "--days", "0"}, {"rotate"},
	} {
		var stdout, stderr bytes.Buffer
		if code := tlsCmd(args, &stdout, &stderr); code == 0 {
			t.Errorf("%v: exit 0", args)
		}
	}
}

// tlsRoundTrip handshakes over loopback TCP and returns the server's view.
func tlsRoundTrip(server, client *tls.Config) (tls.ConnectionState, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return tls.ConnectionState{}, err
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	type result struct {
		state tls.ConnectionState
		err   error
	}
	done := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- result{err: err}
			return
		}
		defer c.Close()
		s := tls.Server(c, server)
		err = s.HandshakeContext(ctx)
		done <- result{s.ConnectionState(), err}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return tls.ConnectionState{}, err
	}
	defer c.Close()
	cerr := tls.Client(c, client).HandshakeContext(ctx)
	if cerr != nil {
		c.Close()
	}
	r := <-done
	if cerr != nil {
		return r.state, cerr
	}
	return r.state, r.err
}
