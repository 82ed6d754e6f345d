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

func TestHighWatermarkCheckpoint(t *testing.T) {
	dir := t.TempDir()
	m, l := openTestManager(t, OSFS{}, dir, smallConfig())
	other, err := m.GetOrCreate("u", 3, smallConfig())
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, plain(10))
	mustAppend(t, other, plain(4))
	tests := []struct {
		set, want int64
	}{
		{5, 5},
		{10, 10},
		{99, 10}, // clamped to the log end offset
		{-3, 0},
		{7, 7},
	}
	for _, tc := range tests {
		l.SetHighWatermarkCheckpoint(tc.set)
		if got := l.HighWatermarkCheckpoint(); got != tc.want {
			t.Fatalf("set %d: got %d, want %d", tc.set, got, tc.want)
		}
	}
	other.SetHighWatermarkCheckpoint(4)

	// Run writes it periodically.
	m.mu.Lock()
	m.mu.checkpointEvery = 5 * time.Millisecond
	m.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); m.Run(ctx) }()
	path := filepath.Join(dir, highWatermarkFile)
	written := func() error {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		got, err := decodeCheckpoint(data)
		if err != nil {
			return fmt.Errorf("decode checkpoint: %w", err)
		}
		if got[topicPartition{"t", 0}] != 7 || got[topicPartition{"u", 3}] != 4 {
			return fmt.Errorf("checkpoint holds %v, want t-0 at 7 and u-3 at 4", got)
		}
		return nil
	}
	err = testutil.Poll(context.Background(), 5*time.Second, written)
	cancel()
	wg.Wait()
	if err != nil {
		t.Fatalf("high watermarks not checkpointed by Run: %v", err)
	}

	l.SetHighWatermarkCheckpoint(9)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m2, l2 := openTestManager(t, OSFS{}, dir, smallConfig())
	if got := l2.HighWatermarkCheckpoint(); got != 9 {
		t.Fatalf("after restart: %d, want 9", got)
	}
	// Clamped to the log end offset at open.
	if err := l2.TruncateTo(6); err != nil {
		t.Fatal(err)
	}
	if got := l2.HighWatermarkCheckpoint(); got > l2.LogEndOffset() {
		t.Fatalf("high watermark %d past LEO %d after truncation", got, l2.LogEndOffset())
	}
	m2.Close()
	if err := os.WriteFile(path, []byte("0\n1\nt 0 1000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, l3 := openTestManager(t, OSFS{}, dir, smallConfig())
	if got := l3.HighWatermarkCheckpoint(); got != l3.LogEndOffset() {
		t.Fatalf("loaded %d, want clamped to LEO %d", got, l3.LogEndOffset())
	}
}
