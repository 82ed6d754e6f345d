package security

import (
	"context"
	"crypto/sha256"
	"maps"
	"os"
	"time"
)

// Run watches the keystore and truststore files until ctx is done,
// reloading them when their content changes. A file that fails to load
// (half written, wrong password, expired) is logged once and the previous
// material stays in use; the next change is tried again. Run returns nil
// when ctx ends. Inline (ssl.keystore.key) material never changes.
func (s *TLSStore) Run(ctx context.Context) error {
	t := time.NewTicker(s.opts.ReloadInterval)
	defer t.Stop()
	// seen is the last observed state of each file, which may be newer
	// than the loaded material when a change failed to load.
	seen := maps.Clone(s.cur.Load().files)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if !pollFiles(seen) {
			continue
		}
		m, err := s.load()
		if err != nil {
			s.opts.Logger.Error("TLS key material changed but cannot be loaded; keeping the previous certificate", "err", err)
			continue
		}
		seen = maps.Clone(m.files)
		s.cur.Store(m)
		s.reloads.Add(1)
		attrs := []any{}
		if m.cert != nil {
			attrs = append(attrs, "subject", m.cert.Leaf.Subject.String(), "not_after", m.cert.Leaf.NotAfter)
		}
		s.opts.Logger.Info("TLS key material reloaded", attrs...)
	}
}

// pollFiles updates seen and reports whether any file's content changed.
// Size and mtime are compared first and the file is hashed only when they
// moved, so a touch without a change costs one read and no reload.
func pollFiles(seen map[string]fileState) bool {
	changed := false
	for path, old := range seen {
		fi, err := os.Stat(path)
		if err != nil {
			if !old.missing {
				seen[path] = fileState{missing: true}
				changed = true // let load report the missing file
			}
			continue
		}
		if !old.missing && fi.Size() == old.size && fi.ModTime().Equal(old.mtime) {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			continue // unreadable for now; retried next tick
		}
		st := fileState{size: fi.Size(), mtime: fi.ModTime(), sum: sha256.Sum256(data)}
		if old.missing || st.sum != old.sum {
			changed = true
		}
		seen[path] = st
	}
	return changed
}
