package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/testutil"
)

// logBytes returns every batch of l from its start, concatenated.
func logBytes(t testing.TB, l *Log) []byte {
	t.Helper()
	var out []byte
	for _, b := range readAll(t, l) {
		out = append(out, b...)
	}
	return out
}

// TestMoveLog moves a log with several segments to the other directory
// while a producer appends to it: every append succeeds, the moved log
// holds the same batches plus those appended meanwhile, the same *Log
// serves from the new directory, the old directory is gone, and a
// restart finds the log in the new one.
func TestMoveLog(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	m, err := OpenManager(dirs, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := smallConfig()
	cfg.SegmentBytes = 2048
	cfg.FileDeleteDelayMs = 0
	l, err := m.GetOrCreate("t", 0, cfg)
	if err != nil {
		t.Fatal(err)
	}
	from := filepath.Dir(l.Dir())
	to := dirs[0]
	if from == to {
		to = dirs[1]
	}
	for i := 0; i < 40; i++ {
		mustAppend(t, l, plain(5))
	}
	before := logBytes(t, l)

	// Append during the move; each append must land exactly once.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	appended := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 2000; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := l.AppendAsLeader(makeBatch(plain(2)), AppendOptions{LogAppendTimeMs: -1}); err != nil {
				t.Errorf("append during the move: %v", err)
				return
			}
			appended++
		}
	}()
	err = m.MoveLog(context.Background(), "t", 0, to)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("move: %v", err)
	}
	if got := filepath.Dir(l.Dir()); got != to {
		t.Fatalf("log in %s after the move, want %s", got, to)
	}
	if dir, _ := m.DirOf("t", 0); dir != to {
		t.Fatalf("DirOf %s, want %s", dir, to)
	}
	mustAppend(t, l, plain(3))
	checkContiguous(t, l)
	after := logBytes(t, l)
	if !bytes.HasPrefix(after, before) {
		t.Fatal("the moved log does not start with the batches it had")
	}
	if want := int64(200 + 2*appended + 3); l.LogEndOffset() != want {
		t.Fatalf("log end offset %d, want %d (%d appends during the move)", l.LogEndOffset(), want, appended)
	}
	t.Logf("%d appends during the move", appended)
	if _, err := os.Stat(filepath.Join(from, "t-0")); !os.IsNotExist(err) {
		t.Fatalf("old directory still there: %v", err)
	}
	m.DeleteDue(time.Now().Add(time.Hour))
	ents, _ := os.ReadDir(from)
	for _, e := range ents {
		if e.IsDir() {
			t.Fatalf("left in the source dir: %s", e.Name())
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m2, err := OpenManager(dirs, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	l2, err := m2.GetOrCreate("t", 0, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(l2.Dir()) != to || !bytes.Equal(logBytes(t, l2), after) {
		t.Fatalf("after restart: in %s, same bytes %v", l2.Dir(), bytes.Equal(logBytes(t, l2), after))
	}
}

// TestMoveLogCrash: whatever point a crash interrupts a move at, the next
// open has exactly one complete log of the partition: a future directory
// beside the current one is removed, a future without a current one (the
// current was renamed away by the commit) is put in its place.
func TestMoveLogCrash(t *testing.T) {
	for _, committed := range []bool{false, true} {
		t.Run(map[bool]string{false: "uncommitted", true: "committed"}[committed], func(t *testing.T) {
			dirs := []string{t.TempDir(), t.TempDir()}
			m, err := OpenManager(dirs, nil)
			if err != nil {
				t.Fatal(err)
			}
			l, err := m.GetOrCreate("t.x", 3, smallConfig())
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 10; i++ {
				mustAppend(t, l, plain(4))
			}
			want := logBytes(t, l)
			cur := l.Dir()
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			other := dirs[0]
			if filepath.Dir(cur) == other {
				other = dirs[1]
			}
			// The future: a full copy, as step 2 leaves it.
			future := filepath.Join(other, "t.x-3.0123456789abcdef"+futureDirSuffix)
			if err := os.MkdirAll(future, DirPerm); err != nil {
				t.Fatal(err)
			}
			ents, _ := os.ReadDir(cur)
			for _, e := range ents {
				data, err := os.ReadFile(filepath.Join(cur, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(future, e.Name()), data, FilePerm); err != nil {
					t.Fatal(err)
				}
			}
			wantDir := cur
			if committed {
				if err := os.Rename(cur, cur+".abc"+deleteDirSuffix); err != nil {
					t.Fatal(err)
				}
				wantDir = filepath.Join(other, "t.x-3")
			}
			m2, err := OpenManager(dirs, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer m2.Close()
			l2, err := m2.GetOrCreate("t.x", 3, smallConfig())
			if err != nil {
				t.Fatal(err)
			}
			if l2.Dir() != wantDir || !bytes.Equal(logBytes(t, l2), want) {
				t.Fatalf("after restart: %s (want %s), same bytes %v", l2.Dir(), wantDir, bytes.Equal(logBytes(t, l2), want))
			}
			if _, err := os.Stat(future); !os.IsNotExist(err) {
				t.Fatalf("future directory left: %v", err)
			}
		})
	}
}

// TestMoveLogRefusals: an unknown directory, and any move while a
// directory is offline; a move to the log's own directory does nothing.
func TestMoveLogRefusals(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	m, err := OpenManager(dirs, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l, err := m.GetOrCreate("t", 0, smallConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := m.MoveLog(context.Background(), "t", 0, t.TempDir()); !errors.Is(err, ErrLogDirNotFound) {
		t.Fatalf("move to an unknown dir: %v", err)
	}
	if err := m.MoveLog(context.Background(), "t", 0, filepath.Dir(l.Dir())); err != nil {
		t.Fatalf("move to its own dir: %v", err)
	}
	m.failDir(m.dirs[1], os.ErrPermission)
	if err := m.MoveLog(context.Background(), "t", 0, dirs[0]); !errors.Is(err, ErrLogDirOffline) {
		t.Fatalf("move with an offline dir: %v", err)
	}
}

// gateFS holds the creation of files in a future directory, from the
// second one on, until gate is closed.
type gateFS struct {
	OSFS
	gate    chan struct{}
	created atomic.Int32
}

func (f *gateFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if flag&os.O_CREATE != 0 && strings.Contains(name, futureDirSuffix+string(filepath.Separator)) && f.created.Add(1) >= 2 {
		<-f.gate
	}
	return f.OSFS.OpenFile(name, flag, perm)
}

// TestMoveLogShowsFuture: while a move copies, LogDirs lists the future
// log in the destination, behind the current log's end, next to the
// current log in the source; after it, only the moved log.
func TestMoveLogShowsFuture(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	fsys := &gateFS{gate: make(chan struct{})}
	m, err := OpenManagerFS(fsys, dirs, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cfg := smallConfig()
	cfg.SegmentBytes = 2048
	l, err := m.GetOrCreate("t", 0, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40; i++ {
		mustAppend(t, l, plain(5))
	}
	from, to := 0, 1
	if filepath.Dir(l.Dir()) == dirs[1] {
		from, to = 1, 0
	}
	done := make(chan error, 1)
	go func() { done <- m.MoveLog(context.Background(), "t", 0, dirs[to]) }()
	var fut []FutureLog
	testutil.Eventually(t, 10*time.Second, func() error {
		ld := m.LogDirs()
		fut = ld[to].Futures
		if len(fut) != 1 || len(ld[from].Logs) != 1 || fsys.created.Load() < 2 {
			return fmt.Errorf("futures %+v, current logs %d", fut, len(ld[from].Logs))
		}
		return nil
	}, "the future log shows while it is copied")
	if fut[0].Topic != "t" || fut[0].Partition != 0 || fut[0].Size <= 0 || fut[0].EndOffset >= l.LogEndOffset() {
		t.Fatalf("future %+v, log end offset %d", fut[0], l.LogEndOffset())
	}
	close(fsys.gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ld := m.LogDirs()
	if len(ld[to].Futures) != 0 || len(ld[to].Logs) != 1 || len(ld[from].Logs) != 0 {
		t.Fatalf("after the move: %+v", ld)
	}
}

// TestMoveLogAcrossTruncation: the log is truncated and written again
// (a follower's truncation on a leader change) while the unlocked copy
// runs; the moved log is the truncated and rewritten one, not a mix.
func TestMoveLogAcrossTruncation(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	fsys := &gateFS{gate: make(chan struct{})}
	m, err := OpenManagerFS(fsys, dirs, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := smallConfig()
	cfg.SegmentBytes = 2048
	l, err := m.GetOrCreate("t", 0, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40; i++ {
		mustAppend(t, l, plain(5))
	}
	to := dirs[0]
	if filepath.Dir(l.Dir()) == to {
		to = dirs[1]
	}
	done := make(chan error, 1)
	go func() { done <- m.MoveLog(context.Background(), "t", 0, to) }()
	testutil.Eventually(t, 10*time.Second, func() error {
		if fsys.created.Load() < 2 {
			return errors.New("the copy has not reached its second file")
		}
		return nil
	}, "the unlocked copy is under way")
	seg0 := filepath.Join(l.Dir(), "00000000000000000000.log")
	before, err := os.Stat(seg0)
	if err != nil {
		t.Fatal(err)
	}
	// Cut inside the first segment (copied whole already) and fill it
	// again with other batches of the same size, so that it ends where
	// it ended: only a copy that knows of the truncation copies it again.
	if err := l.TruncateTo(50); err != nil {
		t.Fatal(err)
	}
	for i := int32(0); i < 30; i++ {
		mustAppend(t, l, idem(7, 0, 5*i, 5))
	}
	if after, err := os.Stat(seg0); err != nil || after.Size() != before.Size() {
		t.Fatalf("first segment %d bytes before the truncation, %v after: the test needs the same size", before.Size(), after)
	}
	want := logBytes(t, l)
	close(fsys.gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(l.Dir()) != to || !bytes.Equal(logBytes(t, l), want) {
		t.Fatalf("moved log in %s, same bytes %v", l.Dir(), bytes.Equal(logBytes(t, l), want))
	}
	checkContiguous(t, l)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m2, err := OpenManager(dirs, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	l2, err := m2.GetOrCreate("t", 0, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(logBytes(t, l2), want) {
		t.Fatal("after restart the moved log differs")
	}
}
