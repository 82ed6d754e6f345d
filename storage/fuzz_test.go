package storage

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzRecover writes arbitrary bytes as the first segment of a log and
// opens it as after a crash: it must not panic, and must end with a valid
// log that accepts appends.
func FuzzRecover(f *testing.F) {
	var valid []byte
	var next int64
	for i := 0; i < 3; i++ {
		b := makeBatch(plain(i + 1))
		b.SetBaseOffset(next)
		next = b.LastOffset() + 1
		valid = append(valid, b...)
	}
	f.Add([]byte{})
	f.Add(valid)
	f.Add(valid[:len(valid)-7])
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		pdir := filepath.Join(dir, "t-0")
		if err := os.MkdirAll(pdir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pdir, "00000000000000000000.log"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		m, l := openTestManager(t, OSFS{}, dir, smallConfig())
		leo := l.LogEndOffset()
		checkFuzzLog(t, l)
		res := mustAppend(t, l, plain(2))
		if res.FirstOffset != leo {
			t.Fatalf("append at %d, LEO was %d", res.FirstOffset, leo)
		}
		checkFuzzLog(t, l)
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		_, l = openTestManager(t, OSFS{}, dir, smallConfig())
		if l.LogEndOffset() != leo+2 {
			t.Fatalf("LEO %d after clean reopen, want %d", l.LogEndOffset(), leo+2)
		}
	})
}

// checkFuzzLog reads the whole log: batches must parse, carry valid CRCs
// and increasing offsets ending at the LEO. (Offsets may have gaps: the
// fuzzer's batches pick their own.)
func checkFuzzLog(t *testing.T, l *Log) {
	t.Helper()
	next := l.LogStartOffset()
	for _, b := range readAll(t, l) {
		if b.BaseOffset() < next || !b.ValidCRC() {
			t.Fatalf("bad batch at %d (next %d)", b.BaseOffset(), next)
		}
		next = b.LastOffset() + 1
	}
	if next > l.LogEndOffset() {
		t.Fatalf("batches end at %d past LEO %d", next, l.LogEndOffset())
	}
}
