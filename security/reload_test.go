package security

import (
	"bytes"
	"context"
	"crypto/x509/pkix"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestTLSReload(t *testing.T) {
	p := newTestPKI(t)
	ca := p.caFile()
	keystore := p.serverCert("kb1")
	var logs syncBuffer
	store, err := NewTLSStore(map[string]string{"ssl.keystore.location": keystore}, TLSOptions{
		Logger: slog.New(slog.NewTextHandler(&logs, nil)), ReloadInterval: 10 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- store.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	srv := mustServer(t, store)
	cli := mustStore(t, map[string]string{"ssl.truststore.location": ca}).ClientConfig("kb1")
	serverSerial := func() string {
		_, ccs, serr, cerr := handshake(t, srv, cli)
		if serr != nil || cerr != nil {
			t.Fatalf("handshake: server %v client %v", serr, cerr)
		}
		return ccs.PeerCertificates[0].SerialNumber.String()
	}
	first := serverSerial()

	// Replace the keystore: new handshakes must get the new certificate.
	replacement := p.issue("kb1-new", CertRequest{Subject: pkix.Name{CommonName: "kb1"}, DNSNames: []string{"kb1"}, ServerAuth: true})
	data, _ := os.ReadFile(replacement)
	if err := os.WriteFile(keystore, data, 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the reload", func() bool { return store.Reloads() == 1 })
	second := serverSerial()
	if second == first {
		t.Fatal("handshake still uses the old certificate after reload")
	}

	// A broken file is logged and the current certificate kept.
	if err := os.WriteFile(keystore, []byte("-----BEGIN PRIVATE KEY-----\ntruncated"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the error log", func() bool { return strings.Contains(logs.String(), "cannot be loaded") })
	if got := serverSerial(); got != second {
		t.Fatal("a broken keystore replaced the working certificate")
	}
	if n := strings.Count(logs.String(), "cannot be loaded"); n != 1 {
		t.Fatalf("broken file logged %d times, want once", n)
	}

	// Fixing the file is picked up again.
	if err := os.WriteFile(keystore, data[:len(data)-1], 0o600); err != nil { // same content minus the final newline
		t.Fatal(err)
	}
	waitFor(t, "the second reload", func() bool { return store.Reloads() == 2 })
	if got := serverSerial(); got != second {
		t.Fatal("reloaded the same certificate but got another")
	}
}
