package security

import (
	"context"
	"crypto/x509/pkix"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/testutil"
)

// replaceFile swaps path's content atomically, as a certificate manager
// would, so the watcher never sees a half-written file.
func replaceFile(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestTLSReload(t *testing.T) {
	p := newTestPKI(t)
	ca := p.caFile()
	keystore := p.serverCert("kb1")
	var logs testutil.SyncBuffer
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
	replaceFile(t, keystore, data)
	testutil.Eventually(t, 10*time.Second, func() bool { return store.Reloads() == 1 }, "the reload")
	second := serverSerial()
	if second == first {
		t.Fatal("handshake still uses the old certificate after reload")
	}

	// A broken file is logged and the current certificate kept.
	replaceFile(t, keystore, []byte("-----BEGIN PRIVATE KEY-----\ntruncated"))
	testutil.Eventually(t, 10*time.Second, func() bool { return strings.Contains(logs.String(), "cannot be loaded") }, "the error log")
	if got := serverSerial(); got != second {
		t.Fatal("a broken keystore replaced the working certificate")
	}
	if n := strings.Count(logs.String(), "cannot be loaded"); n != 1 {
		t.Fatalf("broken file logged %d times, want once", n)
	}

	// Fixing the file is picked up again.
	replaceFile(t, keystore, data[:len(data)-1]) // same certificate, one byte shorter
	testutil.Eventually(t, 10*time.Second, func() bool { return store.Reloads() == 2 }, "the second reload")
	if got := serverSerial(); got != second {
		t.Fatal("reloaded the same certificate but got another")
	}
}

func TestPollFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.pem")
	replaceFile(t, path, []byte("one"))
	seen := map[string]fileState{}
	if _, err := readFile(path, seen, "ssl.keystore.location"); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name   string
		do     func()
		change bool
	}{
		{"nothing", func() {}, false},
		{"touch", func() {
			later := time.Now().Add(time.Hour)
			if err := os.Chtimes(path, later, later); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"new content", func() { replaceFile(t, path, []byte("two")) }, true},
		{"again unchanged", func() {}, false},
		{"removed", func() {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"still removed", func() {}, false},
		{"back", func() { replaceFile(t, path, []byte("two")) }, true},
	}
	for _, st := range steps {
		st.do()
		if got := pollFiles(seen); got != st.change {
			t.Fatalf("%s: changed=%v, want %v", st.name, got, st.change)
		}
	}
}
