package security

import (
	"context"
	"crypto/sha256"
	"os"
	"time"
)

// Run watches the keystore and truststore files until ctx is done,
// reloading them when their content changes. A file that fails to load
// (half written, wrong password, expired) is logged and the previous
// material stays in use; the next change is tried again. Run returns nil
// when ctx ends. Inline (ssl.keystore.key) material never changes.
func (s *TLSStore) Run(ctx context.Context) error {
	t := time.NewTicker(s.opts.ReloadInterval)
	defer t.Stop()
	// failed remembers the file states of the last failed attempt, so a
	// bad file is reported once rather than on every tick.
	var failed map[string]fileState
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		cur := s.cur.Load()
		if !filesChanged(cur.files) {
			failed = nil
			continue
		}
		m, err := s.load()
		if err != nil {
			now := snapshot(cur.files)
			if !sameStates(now, failed) {
				s.opts.Logger.Error("TLS key material changed but cannot be loaded; keeping the previous certificate", "err", err)
			}
			failed = now
			continue
		}
		failed = nil
		s.cur.Store(m)
		s.reloads.Add(1)
		attrs := []any{}
		if m.cert != nil {
			attrs = append(attrs, "subject", m.cert.Leaf.Subject.String(), "not_after", m.cert.Leaf.NotAfter)
		}
		s.opts.Logger.Info("TLS key material reloaded", attrs...)
	}
}

// filesChanged reports whether any file's content differs from files.
// Size and mtime are compared first; the hash settles it, so a touch
// without a change does not reload.
func filesChanged(files map[string]fileState) bool {
	for path, old := range files {
		fi, err := os.Stat(path)
		if err != nil {
			return true // gone or unreadable: let load report it
		}
		if fi.Size() == old.size && fi.ModTime().Equal(old.mtime) {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil || sha256.Sum256(data) != old.sum {
			return true
		}
	}
	return false
}

// snapshot reads the current state of the paths in files.
func snapshot(files map[string]fileState) map[string]fileState {
	out := map[string]fileState{}
	for path := range files {
		fi, err := os.Stat(path)
		if err != nil {
			continue
		}
		data, _ := os.ReadFile(path)
		out[path] = fileState{size: fi.Size(), mtime: fi.ModTime(), sum: sha256.Sum256(data)}
	}
	return out
}

func sameStates(a, b map[string]fileState) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || v.sum != w.sum {
			return false
		}
	}
	return true
}
