package replication

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/storage"
)

// outOfFilesFS fails every open with EMFILE while failing is set.
type outOfFilesFS struct {
	storage.OSFS
	failing atomic.Bool
}

func (f *outOfFilesFS) OpenFile(name string, flag int, perm os.FileMode) (storage.File, error) {
	if f.failing.Load() {
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EMFILE}
	}
	return f.OSFS.OpenFile(name, flag, perm)
}

// TestReplicaOfflineWhenLogCannotOpen: a replica whose log cannot be
// opened is reported by Apply, served as KAFKA_STORAGE_ERROR (not a
// routine NOT_LEADER), leaves no directory, and comes online at the next
// Apply once files can be opened again.
func TestReplicaOfflineWhenLogCannotOpen(t *testing.T) {
	dir := t.TempDir()
	fsys := &outOfFilesFS{}
	logs, err := storage.OpenManagerFS(fsys, []string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	images := newFakeImages(1)
	m := NewManager(ManagerConfig{
		NodeID: 1, Logs: logs, Logger: slog.New(slog.DiscardHandler),
		TopicConfig: func(map[string]string) config.TopicConfig {
			cfg := config.Default()
			return cfg.TopicDefaults()
		},
		ISR: images,
	})
	tp := TopicPartition{Topic: "t", Partition: 0}
	if err := images.update(tp.Topic, tp.Partition, func(p *metadata.Partition) error {
		p.Replicas, p.ISR, p.Leader, p.LeaderEpoch = []int32{1}, []int32{1}, 1, 0
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	fsys.failing.Store(true)
	if err := m.Apply(images.Image()); !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("Apply while out of files: %v, want EMFILE", err)
	}
	_, err = m.Partition(tp)
	if !errors.Is(err, storage.ErrStorage) || KafkaError(err) != kerr.KafkaStorageError {
		t.Fatalf("Partition of the offline replica: %v, want KAFKA_STORAGE_ERROR", err)
	}
	if _, serr := os.Stat(filepath.Join(dir, "t-0")); !os.IsNotExist(serr) {
		t.Fatalf("the offline replica left its directory: %v", serr)
	}

	fsys.failing.Store(false)
	if err := m.Apply(images.Image()); err != nil {
		t.Fatalf("Apply with files back: %v", err)
	}
	if p, err := m.Partition(tp); err != nil || !p.IsLeader() {
		t.Fatalf("replica after recovery: %v", err)
	}
}
