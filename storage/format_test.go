package storage

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file written in a format version this build does not know (by a
// newer kbroker) is refused with its path named, and left as it is: a
// log dir's checkpoints stop the Manager from opening, a partition's
// files stop that log from opening. Nothing is misread or overwritten.
func TestNewerFormatsRefused(t *testing.T) {
	setup := func(t *testing.T) (dir, logDir string) {
		dir = t.TempDir()
		m, err := OpenManager([]string{dir}, nil)
		if err != nil {
			t.Fatal(err)
		}
		l, err := m.GetOrCreateTopic("orders", 0, topicIDA, false, DefaultLogConfig())
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, l, idem(7, 0, 0, 3))
		logDir = l.Dir()
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		return dir, logDir
	}
	snapshotOf := func(t *testing.T, logDir string) string {
		ms, _ := filepath.Glob(filepath.Join(logDir, "*.snapshot"))
		if len(ms) == 0 {
			t.Fatalf("no producer snapshot in %s", logDir)
		}
		return ms[0]
	}
	for _, tc := range []struct {
		name    string
		file    func(t *testing.T, dir, logDir string) string
		rewrite func([]byte) []byte
		atOpen  bool // the Manager refuses to open; else the log does
	}{
		{"recovery point checkpoint", func(_ *testing.T, dir, _ string) string { return filepath.Join(dir, recoveryPointFile) },
			func([]byte) []byte { return []byte("1\n0\n") }, true},
		{"high watermark checkpoint", func(_ *testing.T, dir, _ string) string { return filepath.Join(dir, highWatermarkFile) },
			func([]byte) []byte { return []byte("2\n0\n") }, true},
		{"log start offset checkpoint", func(_ *testing.T, dir, _ string) string { return filepath.Join(dir, logStartOffsetFile) },
			func([]byte) []byte { return []byte("1\n0\n") }, true},
		{"leader epoch checkpoint", func(_ *testing.T, _, logDir string) string { return filepath.Join(logDir, leaderEpochFile) },
			func([]byte) []byte { return []byte("1\n1\n0 0\n") }, false},
		{"partition.metadata", func(_ *testing.T, _, logDir string) string { return filepath.Join(logDir, partitionMetadataFile) },
			func(b []byte) []byte { return bytes.Replace(b, []byte("version: 0"), []byte("version: 1"), 1) }, false},
		{"producer snapshot", func(t *testing.T, _, logDir string) string { return snapshotOf(t, logDir) },
			func(b []byte) []byte { b = bytes.Clone(b); b[4], b[5] = 0, 99; return b }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, logDir := setup(t)
			path := tc.file(t, dir, logDir)
			data, err := os.ReadFile(path)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
			newer := tc.rewrite(data)
			if err := os.WriteFile(path, newer, 0o644); err != nil {
				t.Fatal(err)
			}
			m, err := OpenManager([]string{dir}, nil)
			if !tc.atOpen {
				if err != nil {
					t.Fatal(err)
				}
				_, err = m.GetOrCreateTopic("orders", 0, topicIDA, true, DefaultLogConfig())
			}
			if !errors.Is(err, ErrNewerFormat) || !strings.Contains(err.Error(), path) {
				t.Fatalf("err %v, want ErrNewerFormat naming %s", err, path)
			}
			// A partition's file keeps only that replica offline.
			if !tc.atOpen && !errors.Is(err, ErrStorage) {
				t.Fatalf("err %v is not a storage error", err)
			}
			if m != nil {
				if err := m.Close(); err != nil {
					t.Fatal(err)
				}
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, newer) {
				t.Fatalf("%s was rewritten: %q, was %q", path, got, newer)
			}
		})
	}
}
