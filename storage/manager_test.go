package storage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/testutil"
)

func TestManagerPlacement(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	m, err := OpenManager(dirs, nil)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for p := int32(0); p < 6; p++ {
		l, err := m.GetOrCreate("a-topic", p, DefaultLogConfig())
		if err != nil {
			t.Fatal(err)
		}
		count[filepath.Dir(l.Dir())]++
		mustAppend(t, l, plain(int(p)+1))
	}
	if count[dirs[0]] != 3 || count[dirs[1]] != 3 {
		t.Fatalf("placement %v", count)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m, err = OpenManager(dirs, nil)
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 6; p++ {
		l, err := m.GetOrCreate("a-topic", p, DefaultLogConfig())
		if err != nil {
			t.Fatal(err)
		}
		if l.LogEndOffset() != int64(p)+1 {
			t.Fatalf("partition %d: LEO %d (found in the wrong dir?)", p, l.LogEndOffset())
		}
		if got, ok := m.Get("a-topic", p); !ok || got != l {
			t.Fatal("Get does not return the open log")
		}
	}
	if _, ok := m.Get("other", 0); ok {
		t.Fatal("Get of an unknown partition")
	}
}

// TestConcurrentAppendReadFlush runs appends, reads and Manager.Run's
// periodic flushes together (meant for -race).
func TestConcurrentAppendReadFlush(t *testing.T) {
	dir := t.TempDir()
	cfg := smallConfig()
	cfg.FlushInterval = time.Millisecond
	m, l := openTestManager(t, OSFS{}, dir, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); m.Run(ctx) }()
	defer wg.Wait()
	defer cancel()
	var readers sync.WaitGroup
	stop := make(chan struct{})
	for r := 0; r < 2; r++ {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := l.Read(0, 4096, l.LogEndOffset(), true); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for i := 0; i < 300; i++ {
		mustAppend(t, l, plain(2))
	}
	close(stop)
	readers.Wait()
	err := testutil.Poll(context.Background(), 5*time.Second, func() error {
		if _, err := os.Stat(filepath.Join(dir, recoveryPointFile)); err != nil {
			return err
		}
		if rp, leo := l.RecoveryPoint(), l.LogEndOffset(); rp != leo {
			return fmt.Errorf("recovery point %d, LEO %d", rp, leo)
		}
		return nil
	})
	cancel()
	wg.Wait()
	if err != nil {
		t.Fatalf("flush.ms never flushed and checkpointed: %v", err)
	}
	checkContiguous(t, l)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestFlushMessages(t *testing.T) {
	cfg := DefaultLogConfig()
	cfg.FlushMessages = 5
	_, l := openTestManager(t, OSFS{}, t.TempDir(), cfg)
	mustAppend(t, l, plain(3))
	if l.RecoveryPoint() != 0 {
		t.Fatal("flushed too early")
	}
	mustAppend(t, l, plain(3))
	if l.RecoveryPoint() != 6 {
		t.Fatalf("recovery point %d after flush.messages", l.RecoveryPoint())
	}
}
