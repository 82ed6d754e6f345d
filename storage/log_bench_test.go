package storage

import (
	"os"
	"path/filepath"
	"testing"
)

// benchBatch is a 16 KiB batch of 1 KiB records.
func benchBatch() []byte {
	return makeBatch(spec{n: 16, valueSize: 1000, pid: -1, epoch: -1, seq: -1, ts: testNow})
}

// BenchmarkAppend measures AppendAsLeader (validation with CRC, offset
// assignment, write, index); compare with BenchmarkFileWrite.
func BenchmarkAppend(b *testing.B) {
	_, l := openTestManager(b, OSFS{}, b.TempDir(), DefaultLogConfig())
	tmpl := benchBatch()
	buf := make([]byte, len(tmpl))
	b.SetBytes(int64(len(tmpl)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		copy(buf, tmpl) // a fresh client batch with baseOffset 0
		if _, err := l.AppendAsLeader(buf, AppendOptions{LogAppendTimeMs: -1}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFileWrite writes the same bytes sequentially to a plain file:
// the floor for BenchmarkAppend.
func BenchmarkFileWrite(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "plain"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	tmpl := benchBatch()
	buf := make([]byte, len(tmpl))
	b.SetBytes(int64(len(tmpl)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		copy(buf, tmpl)
		if _, err := f.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
}
