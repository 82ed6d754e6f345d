package storage

import (
	"path/filepath"
	"testing"
)

// LogDirs lists each open log under the directory that holds it, sorted,
// and Size is the sum of the bytes appended (the batches as written).
func TestLogDirsAndSize(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	m, err := OpenManager(dirs, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	want := map[int32]int64{}
	for p := int32(3); p >= 0; p-- {
		l, err := m.GetOrCreate("sized", p, DefaultLogConfig())
		if err != nil {
			t.Fatal(err)
		}
		if l.Size() != 0 {
			t.Fatalf("new log has size %d", l.Size())
		}
		for range p + 1 {
			b := makeBatch(plain(2))
			want[p] += int64(len(b))
			if _, err := l.AppendAsLeader(b, AppendOptions{LogAppendTimeMs: -1}); err != nil {
				t.Fatal(err)
			}
		}
	}
	got := m.LogDirs()
	if len(got) != 2 || got[0].Path != dirs[0] || got[1].Path != dirs[1] {
		t.Fatalf("dirs %+v", got)
	}
	seen := 0
	for _, d := range got {
		prev := int32(-1)
		for _, dl := range d.Logs {
			seen++
			if dl.Topic != "sized" || dl.Partition <= prev {
				t.Fatalf("%s: unsorted or foreign %s-%d after %d", d.Path, dl.Topic, dl.Partition, prev)
			}
			prev = dl.Partition
			if filepath.Dir(dl.Log.Dir()) != d.Path {
				t.Fatalf("%s-%d listed under %s, lives in %s", dl.Topic, dl.Partition, d.Path, dl.Log.Dir())
			}
			if s := dl.Log.Size(); s != want[dl.Partition] {
				t.Fatalf("partition %d: size %d, want %d", dl.Partition, s, want[dl.Partition])
			}
			if dl.Log.Failed() != nil {
				t.Fatal(dl.Log.Failed())
			}
		}
	}
	if seen != 4 {
		t.Fatalf("%d logs listed, want 4", seen)
	}
}
