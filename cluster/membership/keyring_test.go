package membership

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"github.com/kbroker/kbroker/internal/testutil"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func newKey(t *testing.T, n int) string {
	t.Helper()
	k := make([]byte, n)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(k)
}

func writeKeys(t *testing.T, path string, keys ...string) {
	t.Helper()
	// Write then rename, as an operator's tooling (or a Kubernetes Secret
	// update) would, so the watcher never reads half a file.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte("# gossip keys\n"+strings.Join(keys, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestLoadKeyFile(t *testing.T) {
	dir := t.TempDir()
	k16, k32 := newKey(t, 16), newKey(t, 32)
	cases := []struct {
		name    string
		content string
		want    int
		errHas  string
	}{
		{"one key", k16 + "\n", 1, ""},
		{"primary and secondary with comments", "# primary\n" + k32 + "\n\n" + k16 + "\n", 2, ""},
		{"duplicates collapse", k16 + "\n" + k16 + "\n", 1, ""},
		{"empty", "# nothing\n", 0, "no key"},
		{"not base64", "not*base64\n", 0, "line 1: not base64"},
		{"wrong length", base64.StdEncoding.EncodeToString([]byte("short")) + "\n", 0, "line 1: 5 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_"))
			if err := os.WriteFile(p, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			keys, err := LoadKeyFile(p)
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) || !strings.Contains(err.Error(), p) {
					t.Fatalf("err = %v, want one naming %s and %q", err, p, tc.errHas)
				}
				return
			}
			if err != nil || len(keys) != tc.want {
				t.Fatalf("keys = %d, err = %v; want %d keys", len(keys), err, tc.want)
			}
		})
	}
	if _, err := LoadKeyFile(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("missing file loaded")
	}
	if _, err := New(Config{NodeID: 1, BindAddr: "127.0.0.1:0", KeyFile: filepath.Join(dir, "missing")}); err == nil {
		t.Fatal("New accepted a missing key file")
	}
}

func TestApplyKeysRotates(t *testing.T) {
	a, b := bytes.Repeat([]byte{1}, 16), bytes.Repeat([]byte{2}, 32)
	ring, err := newKeyring([][]byte{a})
	if err != nil {
		t.Fatal(err)
	}
	steps := [][][]byte{{a, b}, {b, a}, {b}}
	for i, keys := range steps {
		if err := applyKeys(ring, keys); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if !bytes.Equal(ring.GetPrimaryKey(), keys[0]) || len(ring.GetKeys()) != len(keys) {
			t.Fatalf("step %d: primary %x, %d keys; want %x, %d", i, ring.GetPrimaryKey(), len(ring.GetKeys()), keys[0], len(keys))
		}
	}
}

// keyedConfig is testConfig with a key file that is re-read quickly.
func keyedConfig(id int32, keyFile, bind string, seeds ...string) Config {
	c := testConfig(id, bind, seeds...)
	c.KeyFile = keyFile
	c.KeyReloadInterval = 50 * time.Millisecond
	return c
}

// A node without the cluster's key cannot join, and cannot make the
// members believe anything about anyone: its messages are dropped.
func TestGossipWithoutKeyIsIgnored(t *testing.T) {
	dir := t.TempDir()
	good, other := filepath.Join(dir, "good"), filepath.Join(dir, "other")
	writeKeys(t, good, newKey(t, 32))
	writeKeys(t, other, newKey(t, 32))

	n1 := start(t, keyedConfig(1, good, "127.0.0.1:0"))
	seed := n1.addr(t)
	n2 := start(t, keyedConfig(2, good, "127.0.0.1:0", seed))
	for _, n := range []*testNode{n1, n2} {
		waitView(t, n, 10*time.Second, []int32{1, 2}, 1, 2)
	}

	// A stranger claiming to be broker 7, once without any key and once
	// with a wrong one, keeps trying to join through the seed.
	plain := start(t, testConfig(7, "127.0.0.1:0", seed))
	wrong := start(t, keyedConfig(8, other, "127.0.0.1:0", seed))
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		for _, n := range []*testNode{n1, n2} {
			if alive := n.m.Alive(); len(alive) != 2 {
				t.Fatalf("node %d sees %v alive; strangers must not join", n.m.cfg.NodeID, alive)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The strangers leaving (a broadcast of "dead" in their own name)
	// changes nothing either.
	plain.stop(t)
	wrong.stop(t)
	for _, n := range []*testNode{n1, n2} {
		waitView(t, n, time.Second, []int32{1, 2}, 1, 2)
	}
}

// The three steps of a rolling rotation, applied by rewriting the files
// while the nodes run, never split the cluster.
func TestGossipKeyRotationWithoutRestart(t *testing.T) {
	dir := t.TempDir()
	oldKey, newKeyStr := newKey(t, 16), newKey(t, 32)
	f1, f2 := filepath.Join(dir, "n1"), filepath.Join(dir, "n2")
	writeKeys(t, f1, oldKey)
	writeKeys(t, f2, oldKey)
	n1 := start(t, keyedConfig(1, f1, "127.0.0.1:0"))
	n2 := start(t, keyedConfig(2, f2, "127.0.0.1:0", n1.addr(t)))
	for _, n := range []*testNode{n1, n2} {
		waitView(t, n, 10*time.Second, []int32{1, 2}, 1, 2)
	}

	for _, step := range [][]string{{oldKey, newKeyStr}, {newKeyStr, oldKey}, {newKeyStr}} {
		for _, f := range []string{f1, f2} {
			writeKeys(t, f, step...)
		}
		want, _ := base64.StdEncoding.DecodeString(step[0])
		for _, n := range []*testNode{n1, n2} {
			testutil.Eventually(t, 5*time.Second, func() bool {
				n.m.mu.Lock()
				defer n.m.mu.Unlock()
				return n.m.mu.ring != nil && bytes.Equal(n.m.mu.ring.GetPrimaryKey(), want)
			}, "primary key reloaded")
		}
		// Probes go on with the new keys: nobody is suspected.
		time.Sleep(500 * time.Millisecond)
		for _, n := range []*testNode{n1, n2} {
			waitView(t, n, time.Second, []int32{1, 2}, 1, 2)
		}
	}

	// After the last step the old key is no longer accepted.
	n3 := start(t, keyedConfig(3, writeTemp(t, dir, oldKey), "127.0.0.1:0", n1.addr(t)))
	time.Sleep(time.Second)
	if alive := n1.m.Alive(); len(alive) != 2 {
		t.Fatalf("a node with the retired key joined: %v", alive)
	}
	n3.stop(t)
}

func writeTemp(t *testing.T, dir, key string) string {
	p := filepath.Join(dir, "retired")
	writeKeys(t, p, key)
	return p
}
