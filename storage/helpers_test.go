package storage

import (
	"encoding/binary"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kbroker/kbroker/storage/logfs"
	"github.com/kbroker/kbroker/wire/record"
)

// spec describes a test batch of n uncompressed records.
type spec struct {
	n         int
	valueSize int
	pid       int64
	epoch     int16
	seq       int32
	ts        int64 // base timestamp; record i has ts+i
}

// testNow is the timestamp of test records: recent, so segment.ms does not
// roll.
var testNow = time.Now().UnixMilli()

func plain(n int) spec { return spec{n: n, valueSize: 10, pid: -1, epoch: -1, seq: -1, ts: testNow} }

func idem(pid int64, epoch int16, seq int32, n int) spec {
	return spec{n: n, valueSize: 10, pid: pid, epoch: epoch, seq: seq, ts: testNow}
}

// makeBatch builds a valid v2 batch with baseOffset 0, as a client sends.
func makeBatch(s spec) record.Batch {
	b := make([]byte, record.HeaderSize)
	for i := 0; i < s.n; i++ {
		var rec []byte
		rec = append(rec, 0) // attributes
		rec = binary.AppendVarint(rec, int64(i))
		rec = binary.AppendVarint(rec, int64(i))
		rec = binary.AppendVarint(rec, -1) // null key
		rec = binary.AppendVarint(rec, int64(s.valueSize))
		for j := 0; j < s.valueSize; j++ {
			rec = append(rec, byte('a'+(i+j)%26))
		}
		rec = binary.AppendVarint(rec, 0) // no headers
		b = binary.AppendVarint(b, int64(len(rec)))
		b = append(b, rec...)
	}
	be := binary.BigEndian
	be.PutUint64(b[0:], 0)
	be.PutUint32(b[8:], uint32(len(b)-record.LogOverhead))
	be.PutUint32(b[12:], 0xffffffff)
	b[16] = record.MagicV2
	be.PutUint16(b[21:], 0)
	be.PutUint32(b[23:], uint32(s.n-1))
	be.PutUint64(b[27:], uint64(s.ts))
	be.PutUint64(b[35:], uint64(s.ts+int64(max(s.n-1, 0))))
	be.PutUint64(b[43:], uint64(s.pid))
	be.PutUint16(b[51:], uint16(s.epoch))
	be.PutUint32(b[53:], uint32(s.seq))
	be.PutUint32(b[57:], uint32(s.n))
	record.Batch(b).SetCRC()
	return record.Batch(b)
}

// openTestManager opens a manager over dir and one log in it.
func openTestManager(t testing.TB, fsys FS, dir string, cfg LogConfig) (*Manager, *Log) {
	t.Helper()
	m, err := OpenManagerFS(fsys, []string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := m.GetOrCreate("t", 0, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m, l
}

func mustAppend(t testing.TB, l *Log, s spec) AppendResult {
	t.Helper()
	res, err := l.AppendAsLeader(makeBatch(s), AppendOptions{LogAppendTimeMs: -1})
	if err != nil {
		t.Fatalf("append %+v: %v", s, err)
	}
	return res
}

// readAll returns every batch in the log from offset 0.
func readAll(t testing.TB, l *Log) []record.Batch {
	t.Helper()
	var out []record.Batch
	off := l.LogStartOffset()
	for off < l.LogEndOffset() {
		data, err := l.Read(off, 1<<20, l.LogEndOffset(), true)
		if err != nil {
			t.Fatalf("read %d: %v", off, err)
		}
		if len(data) == 0 {
			t.Fatalf("read %d: empty below LEO %d", off, l.LogEndOffset())
		}
		for len(data) > 0 {
			b, rest, err := record.Parse(data)
			if err != nil {
				t.Fatalf("parse at %d: %v", off, err)
			}
			out = append(out, b)
			off = b.LastOffset() + 1
			data = rest
		}
	}
	return out
}

// checkContiguous verifies offsets 0..LEO-1 are held once each, in order,
// by batches with valid CRCs.
func checkContiguous(t testing.TB, l *Log) {
	t.Helper()
	next := l.LogStartOffset()
	for _, b := range readAll(t, l) {
		if b.BaseOffset() != next {
			t.Fatalf("batch base %d, want %d", b.BaseOffset(), next)
		}
		if !b.ValidCRC() {
			t.Fatalf("batch %d: bad CRC", b.BaseOffset())
		}
		next = b.LastOffset() + 1
	}
	if next != l.LogEndOffset() {
		t.Fatalf("batches end at %d, LEO %d", next, l.LogEndOffset())
	}
}

// mustRemove removes path, which must exist: a test that removes a file to
// simulate a crash checks nothing if the file was never there.
func mustRemove(t testing.TB, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

// faultFS injects faults into writes of .log files.
type faultFS struct {
	OSFS
	mu        sync.Mutex
	tornWrite bool // the next .log write stores half its bytes, then the process "crashes"
	noSpace   bool // .log writes store half their bytes and fail with ENOSPC
	crashed   bool // every operation fails
	// renamesLeft, when limitRenames is set, is how many renames succeed
	// before the process "crashes".
	limitRenames bool
	renamesLeft  int
	// removeFails, when set, makes Remove of the names it accepts fail
	// with EIO.
	removeFails func(name string) bool
}

var errCrashed = errors.New("injected crash")

func (f *faultFS) set(fn func(f *faultFS)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *faultFS) check() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.crashed {
		return errCrashed
	}
	return nil
}

func (f *faultFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	file, err := f.OSFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f, name: name}, nil
}

func (f *faultFS) Rename(o, n string) error {
	f.mu.Lock()
	if f.limitRenames {
		if f.renamesLeft == 0 {
			f.crashed = true
		}
		f.renamesLeft--
	}
	f.mu.Unlock()
	if err := f.check(); err != nil {
		return err
	}
	return f.OSFS.Rename(o, n)
}

type faultFile struct {
	File
	fs   *faultFS
	name string
}

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	crashed, torn, full := f.fs.crashed, f.fs.tornWrite, f.fs.noSpace
	if torn && strings.HasSuffix(f.name, logfs.LogSuffix) {
		f.fs.crashed = true
	}
	f.fs.mu.Unlock()
	switch {
	case crashed:
		return 0, errCrashed
	case !strings.HasSuffix(f.name, logfs.LogSuffix) || (!torn && !full):
		return f.File.WriteAt(p, off)
	}
	n, err := f.File.WriteAt(p[:len(p)/2], off)
	if err != nil {
		return n, err
	}
	if torn {
		return n, io.ErrShortWrite
	}
	return n, &os.PathError{Op: "write", Path: f.name, Err: syscall.ENOSPC}
}

func (f *faultFS) Remove(name string) error {
	if err := f.check(); err != nil {
		return err
	}
	f.mu.Lock()
	fails := f.removeFails != nil && f.removeFails(name)
	f.mu.Unlock()
	if fails {
		return &os.PathError{Op: "remove", Path: name, Err: syscall.EIO}
	}
	return f.OSFS.Remove(name)
}

func (f *faultFS) SyncDir(dir string) error {
	if err := f.check(); err != nil {
		return err
	}
	return f.OSFS.SyncDir(dir)
}

func (f *faultFile) Truncate(size int64) error {
	if err := f.fs.check(); err != nil {
		return err
	}
	return f.File.Truncate(size)
}

func (f *faultFile) Sync() error {
	if err := f.fs.check(); err != nil {
		return err
	}
	return f.File.Sync()
}
