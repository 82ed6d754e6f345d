package membership

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/memberlist"
)

// The gossip key file (gossip.secret.key.file) holds the keys memberlist
// uses to encrypt and authenticate every gossip message (AES-GCM). One key
// per line, base64 (standard encoding), decoding to 16, 24 or 32 bytes
// (AES-128/192/256); blank lines and lines starting with # are ignored.
// The first key is the primary: messages are sent with it. The others are
// only accepted, which is what a rolling rotation needs:
//
//  1. every node: "old\nnew"  (new accepted everywhere)
//  2. every node: "new\nold"  (new used; old still accepted from laggards)
//  3. every node: "new"       (old no longer accepted)
//
// The file is re-read while Run runs (Config.KeyReloadInterval), so each
// step needs no restart. With a keyring, memberlist drops any message it
// cannot decrypt and verify: a stranger without the key can neither join
// nor spread alive/suspect/dead rumours about real members.

// DefaultKeyReloadInterval is how often the key file is checked for changes
// when Config.KeyReloadInterval is zero.
const DefaultKeyReloadInterval = 5 * time.Second

// maxKeyFileSize bounds the key file; a few keys take a few hundred bytes.
const maxKeyFileSize = 64 << 10

// LoadKeyFile reads and validates a gossip key file. It returns the keys,
// primary first. The error names the file and, for a bad key, its line.
func LoadKeyFile(path string) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gossip key file: %w", err)
	}
	defer f.Close()
	data := make([]byte, maxKeyFileSize+1)
	n, err := f.Read(data)
	if err != nil && n == 0 {
		return nil, fmt.Errorf("gossip key file %s: %w", path, err)
	}
	if n > maxKeyFileSize {
		return nil, fmt.Errorf("gossip key file %s: larger than %d bytes", path, maxKeyFileSize)
	}
	return parseKeys(path, data[:n])
}

func parseKeys(path string, data []byte) ([][]byte, error) {
	var keys [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		k, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			// The error text carries no key material.
			return nil, fmt.Errorf("gossip key file %s line %d: not base64", path, line)
		}
		if err := memberlist.ValidateKey(k); err != nil {
			return nil, fmt.Errorf("gossip key file %s line %d: %d bytes, want 16, 24 or 32", path, line, len(k))
		}
		if !slices.ContainsFunc(keys, func(o []byte) bool { return bytes.Equal(o, k) }) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("gossip key file %s: no key", path)
	}
	return keys, nil
}

// newKeyring builds memberlist's keyring from keys, primary first.
func newKeyring(keys [][]byte) (*memberlist.Keyring, error) {
	return memberlist.NewKeyring(keys[1:], keys[0])
}

// applyKeys makes ring hold exactly keys, with keys[0] primary. New keys
// are installed before the primary switches, and old ones removed last, so
// the ring is never without a key the peers use.
func applyKeys(ring *memberlist.Keyring, keys [][]byte) error {
	for _, k := range keys {
		if err := ring.AddKey(k); err != nil {
			return err
		}
	}
	if err := ring.UseKey(keys[0]); err != nil {
		return err
	}
	for _, old := range ring.GetKeys() {
		if !slices.ContainsFunc(keys, func(k []byte) bool { return bytes.Equal(k, old) }) {
			if err := ring.RemoveKey(old); err != nil {
				return err
			}
		}
	}
	return nil
}

// fingerprint identifies a key set in logs without revealing it.
func fingerprint(keys [][]byte) string {
	h := sha256.New()
	for _, k := range keys {
		h.Write(k)
		h.Write([]byte{0})
	}
	return fmt.Sprintf("%x", h.Sum(nil)[:4])
}

// watchKeyFile re-reads the key file every interval until ctx is done and
// applies a changed, valid key set to ring. A file that fails to load is
// logged and the current keys stay.
func (m *Membership) watchKeyFile(ctx context.Context, ring *memberlist.Keyring, current [][]byte) {
	t := time.NewTicker(m.cfg.keyReloadInterval())
	defer t.Stop()
	last := fingerprint(current)
	var lastErr string
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		keys, err := LoadKeyFile(m.cfg.KeyFile)
		if err != nil {
			if msg := err.Error(); msg != lastErr {
				m.log.Warn("gossip key file not reloaded; keeping the current keys", "err", err)
				lastErr = msg
			}
			continue
		}
		lastErr = ""
		fp := fingerprint(keys)
		if fp == last {
			continue
		}
		if err := applyKeys(ring, keys); err != nil {
			m.log.Error("gossip keyring update failed", "err", err)
			continue
		}
		last = fp
		m.log.Info("gossip keys reloaded", "keys", len(keys), "fingerprint", fp)
	}
}

func (c *Config) keyReloadInterval() time.Duration {
	if c.KeyReloadInterval > 0 {
		return c.KeyReloadInterval
	}
	return DefaultKeyReloadInterval
}
