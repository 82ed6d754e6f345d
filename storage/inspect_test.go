package storage

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kbroker/kbroker/wire/record"
)

func TestReadLogBelow(t *testing.T) {
	cfg := smallConfig()
	cfg.SegmentBytes = 1024 // several segments
	_, l := openTestManager(t, OSFS{}, t.TempDir(), cfg)
	for range 40 {
		mustAppend(t, l, plain(3))
	}
	all, err := ReadLogBelow(l.Dir(), l.LogEndOffset())
	if err != nil {
		t.Fatal(err)
	}
	var offsets []int64
	for rest := all; len(rest) > 0; {
		b, next, err := record.Parse(rest)
		if err != nil {
			t.Fatal(err)
		}
		offsets = append(offsets, b.BaseOffset())
		rest = next
	}
	if len(offsets) != 40 || offsets[39] != 117 {
		t.Fatalf("read %d batches ending at base offset %v", len(offsets), offsets[len(offsets)-1:])
	}
	below, err := ReadLogBelow(l.Dir(), 30)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(below); n == 0 || n >= len(all) {
		t.Fatalf("%d bytes below offset 30 of %d", n, len(all))
	}
	// A torn last batch ends the log, as recovery would cut it.
	segs, _ := filepath.Glob(filepath.Join(l.Dir(), "*.log"))
	last := segs[len(segs)-1]
	f, err := os.OpenFile(last, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(all[:30]); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadLogBelow(l.Dir(), 1000); err != nil || len(got) != len(all) {
		t.Fatalf("torn tail: %d bytes, %v", len(got), err)
	}
}
