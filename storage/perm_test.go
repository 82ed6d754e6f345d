package storage

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// Partition data is not world-readable: directories 0750, files 0640.
func TestFilePermissions(t *testing.T) {
	dir := t.TempDir()
	m, l := openTestManager(t, OSFS{}, dir, DefaultLogConfig())
	mustAppend(t, l, plain(3))
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	checked := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		info, err := os.Stat(path)
		if err != nil {
			return err
		}
		want := FilePerm
		if d.IsDir() {
			want = DirPerm
		}
		// The umask can only take bits away: nothing beyond want is set.
		if got := info.Mode().Perm(); got&^want != 0 {
			t.Errorf("%s: mode %v, want at most %v", path, got, want)
		}
		checked++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 3 {
		t.Fatalf("checked %d paths; expected a partition directory and its files", checked)
	}
}
