package storage

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kbroker/kbroker/wire/record"
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

// BenchmarkRead reads the log sequentially in 1 MiB chunks.
func BenchmarkRead(b *testing.B) {
	_, l := openTestManager(b, OSFS{}, b.TempDir(), DefaultLogConfig())
	tmpl := benchBatch()
	buf := make([]byte, len(tmpl))
	for i := 0; i < (64<<20)/len(tmpl); i++ {
		copy(buf, tmpl)
		if _, err := l.AppendAsLeader(buf, AppendOptions{LogAppendTimeMs: -1}); err != nil {
			b.Fatal(err)
		}
	}
	leo := l.LogEndOffset()
	b.SetBytes(1 << 20)
	b.ReportAllocs()
	b.ResetTimer()
	off := int64(0)
	for i := 0; i < b.N; i++ {
		if off >= leo {
			off = 0
		}
		data, err := l.Read(off, 1<<20, leo, true)
		if err != nil || len(data) == 0 {
			b.Fatalf("read at %d: %d bytes, %v", off, len(data), err)
		}
		last, _, err := record.Parse(data[lastBatchStart(data):])
		if err != nil {
			b.Fatal(err)
		}
		off = last.LastOffset() + 1
	}
}

// lastBatchStart returns the position of the last whole batch in data.
func lastBatchStart(data []byte) int {
	pos := 0
	for {
		n, err := record.PeekSize(data[pos:])
		if err != nil || pos+n >= len(data) {
			return pos
		}
		pos += n
	}
}

// BenchmarkRecover measures recovery (every batch read and CRC-checked,
// indexes rebuilt) of a 64 MiB log of 16 KiB batches after a crash; MB/s
// gives the recovery time per GiB.
func BenchmarkRecover(b *testing.B) {
	dir := b.TempDir()
	_, l := openTestManager(b, OSFS{}, dir, DefaultLogConfig())
	tmpl := benchBatch()
	buf := make([]byte, len(tmpl))
	var size int64
	for size < 64<<20 {
		copy(buf, tmpl)
		if _, err := l.AppendAsLeader(buf, AppendOptions{LogAppendTimeMs: -1}); err != nil {
			b.Fatal(err)
		}
		size += int64(len(buf))
	}
	if err := l.Flush(); err != nil {
		b.Fatal(err)
	}
	leo := l.LogEndOffset()
	pdir := l.Dir()
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// No clean-shutdown marker and recovery point 0: everything is
		// checked.
		l2, err := OpenLog(pdir, DefaultLogConfig(), LogOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if l2.LogEndOffset() != leo {
			b.Fatalf("LEO %d, want %d", l2.LogEndOffset(), leo)
		}
		b.StopTimer()
		for _, s := range l2.mu.segments {
			s.close()
		}
		b.StartTimer()
	}
}
