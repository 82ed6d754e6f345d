package replication

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/storage"
	"github.com/kbroker/kbroker/wire/record"
)

// strayLog is a partition log written on disk before the broker starts.
type strayLog struct {
	topic     string
	partition int32
	id        [16]byte // zero: no partition.metadata (a log of an older kbroker)
	records   int
}

// writeLogs writes logs into dirs as a previous run of the broker left
// them.
func writeLogs(t *testing.T, dirs []string, logs ...strayLog) {
	t.Helper()
	sm, err := storage.OpenManager(dirs, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range logs {
		var l *storage.Log
		if s.id == ([16]byte{}) {
			l, err = sm.GetOrCreate(s.topic, s.partition, storage.DefaultLogConfig())
		} else {
			l, err = sm.GetOrCreateTopic(s.topic, s.partition, s.id, true, storage.DefaultLogConfig())
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := range s.records {
			b, err := record.Build(record.BatchSpec{BaseTimestamp: time.Now().UnixMilli(), PartitionLeaderEpoch: -1,
				ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
				[]record.Record{{Value: []byte{byte(i)}}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.AppendAsLeader(b, storage.AppendOptions{LogAppendTimeMs: -1}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := sm.Close(); err != nil {
		t.Fatal(err)
	}
}

// strayImage builds an image at offset off with topics led by broker 1.
func strayImage(off uint64, topics ...*metadata.Topic) *metadata.Image {
	img := &metadata.Image{Offset: off, ClusterID: "c", Brokers: map[int32]*metadata.Broker{},
		Topics: map[string]*metadata.Topic{}, TopicsByID: map[[16]byte]*metadata.Topic{}}
	for _, t := range topics {
		img.Topics[t.Name] = t
		img.TopicsByID[t.ID] = t
	}
	return img
}

// strayTopic is a topic whose partition i has the replicas replicas[i]
// (led by the first).
func strayTopic(name string, id [16]byte, replicas ...[]int32) *metadata.Topic {
	t := &metadata.Topic{Name: name, ID: id}
	for i, r := range replicas {
		t.Partitions = append(t.Partitions, &metadata.Partition{ID: int32(i), Replicas: r, ISR: r, Leader: r[0]})
	}
	return t
}

func newStrayManager(t *testing.T, logs *storage.Manager, current func(*metadata.Image) bool, metadataDir string) *Manager {
	return NewManager(ManagerConfig{NodeID: 1, Logs: logs, Logger: slog.New(slog.DiscardHandler),
		TopicConfig: func(map[string]string) config.TopicConfig {
			cfg := config.Default()
			return cfg.TopicDefaults()
		},
		InterBrokerListener: "REPLICATION",
		Current:             current,
		MetadataLogDir:      metadataDir,
	})
}

// dirsOf lists the partition directories (not -delete ones) in dir.
func dirsOf(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && !strings.HasSuffix(e.Name(), "-delete") {
			out = append(out, e.Name())
		}
	}
	return out
}

func idOf(b byte) [16]byte {
	return [16]byte{b, 0xaa, 0xbb, 0xcc, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, b}
}

// TestStrayLogsRemovedAtFirstImage: at the first current image, the logs
// on disk of topics gone, of partitions assigned elsewhere and of an older
// topic of the same name are removed (internal topics alike); a topic
// created again starts empty; matching logs and old logs without a topic
// id that the image assigns here are kept with their records; the
// metadata log's directory is never touched.
func TestStrayLogsRemovedAtFirstImage(t *testing.T) {
	dir := t.TempDir()
	writeLogs(t, []string{dir},
		strayLog{"gone", 0, idOf(1), 3},
		strayLog{"moved", 0, idOf(2), 3},
		strayLog{"moved", 1, idOf(2), 3},
		strayLog{"recreated", 0, idOf(3), 5},
		strayLog{"kept", 0, idOf(4), 2},
		strayLog{"legacy", 0, [16]byte{}, 4},
		strayLog{"legacygone", 0, [16]byte{}, 1},
		strayLog{"shrunk", 3, idOf(5), 1},
		strayLog{"__consumer_offsets", 0, idOf(6), 2},
		strayLog{"__consumer_offsets", 1, idOf(6), 2},
		strayLog{"__transaction_state", 0, idOf(7), 2},
	)
	// metadata.log.dir named like a partition inside the log dir.
	raftDir := filepath.Join(dir, "raft-0")
	if err := os.MkdirAll(raftDir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(raftDir, "raft.db"), []byte("x"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "__cluster_metadata-0"), 0o750); err != nil {
		t.Fatal(err)
	}

	logs, err := storage.OpenManager([]string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	m := newStrayManager(t, logs, func(img *metadata.Image) bool { return true }, raftDir)
	img := strayImage(10,
		strayTopic("moved", idOf(2), []int32{2, 3}, []int32{1, 2}),
		strayTopic("recreated", idOf(33), []int32{1, 2}),
		strayTopic("kept", idOf(4), []int32{1}),
		strayTopic("legacy", idOf(8), []int32{2, 1}),
		strayTopic("shrunk", idOf(5), []int32{1}),
		strayTopic("__consumer_offsets", idOf(6), []int32{1}, []int32{2}),
		strayTopic("__transaction_state", idOf(77), []int32{1}),
	)
	if err := m.Apply(img); err != nil {
		t.Fatal(err)
	}
	want := []string{"__cluster_metadata-0", "__consumer_offsets-0", "__transaction_state-0", "kept-0", "legacy-0", "moved-1", "raft-0", "recreated-0", "shrunk-0"}
	if got := dirsOf(t, dir); !slices.Equal(got, want) {
		t.Fatalf("partition dirs after the first image:\n got %v\nwant %v", got, want)
	}
	leo := func(topic string) int64 {
		t.Helper()
		p, err := m.Partition(TopicPartition{Topic: topic, Partition: 0})
		if err != nil {
			t.Fatal(err)
		}
		return p.log.LogEndOffset()
	}
	for topic, end := range map[string]int64{"recreated": 0, "kept": 2, "legacy": 4, "__consumer_offsets": 2, "__transaction_state": 0} {
		if got := leo(topic); got != end {
			t.Errorf("%s-0 ends at %d, want %d", topic, got, end)
		}
	}
	ids := map[string][16]byte{}
	for _, pd := range logs.PartitionDirs() {
		ids[pd.Topic] = pd.TopicID
		if !pd.HasTopicID && pd.Topic != "raft" && pd.Topic != metadataTopic {
			t.Errorf("%s-%d has no topic id", pd.Topic, pd.Partition)
		}
	}
	if ids["recreated"] != idOf(33) || ids["legacy"] != idOf(8) || ids["__transaction_state"] != idOf(77) {
		t.Fatalf("topic ids on disk %v", ids)
	}
	if _, err := os.Stat(filepath.Join(raftDir, "raft.db")); err != nil {
		t.Fatalf("the metadata log dir: %v", err)
	}

	// A later image removes what it stops assigning (Apply's own removal).
	if err := m.Apply(strayImage(11, strayTopic("kept", idOf(4), []int32{1}))); err != nil {
		t.Fatal(err)
	}
	want = []string{"__cluster_metadata-0", "kept-0", "raft-0"}
	if got := dirsOf(t, dir); !slices.Equal(got, want) {
		t.Fatalf("partition dirs after the second image:\n got %v\nwant %v", got, want)
	}
}

// TestStaleImageRemovesNothing: an image not known current (a restarted
// broker's metadata log replayed, not yet caught up) removes no log, and
// opens no log it cannot match by topic id: a log of another id, or an
// old log without one, stays offline and untouched; the first current
// image then decides.
func TestStaleImageRemovesNothing(t *testing.T) {
	dir := t.TempDir()
	writeLogs(t, []string{dir},
		strayLog{"later", 0, idOf(1), 3},   // created after the stale image
		strayLog{"renewed", 0, idOf(3), 4}, // the stale image has its older topic
		strayLog{"legacy", 0, [16]byte{}, 2},
		strayLog{"gone", 0, idOf(4), 1},
	)
	logs, err := storage.OpenManager([]string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	m := newStrayManager(t, logs, func(img *metadata.Image) bool { return img.Offset >= 20 }, "")
	stale := strayImage(10,
		strayTopic("renewed", idOf(2), []int32{1}),
		strayTopic("legacy", idOf(9), []int32{1}),
	)
	err = m.Apply(stale)
	if !errors.Is(err, storage.ErrInconsistentTopicID) || !errors.Is(err, storage.ErrStorage) {
		t.Fatalf("stale image: %v, want the renewed log refused", err)
	}
	all := []string{"gone-0", "later-0", "legacy-0", "renewed-0"}
	if got := dirsOf(t, dir); !slices.Equal(got, all) {
		t.Fatalf("a stale image removed logs: %v", got)
	}
	if got := m.OfflineReplicas(); !slices.Equal(got, []TopicPartition{{Topic: "legacy", Partition: 0}, {Topic: "renewed", Partition: 0}}) {
		t.Fatalf("offline replicas %v", got)
	}
	for _, pd := range logs.PartitionDirs() {
		switch {
		case pd.Topic == "legacy" && pd.HasTopicID:
			t.Fatal("a stale image gave the old log a topic id")
		case pd.Topic == "renewed" && pd.TopicID != idOf(3):
			t.Fatalf("renewed's topic id became %x", pd.TopicID)
		}
	}
	// Not current either: the stale image's successor, without renewed.
	if err := m.Apply(strayImage(15, strayTopic("legacy", idOf(9), []int32{1}))); !errors.Is(err, storage.ErrInconsistentTopicID) {
		t.Fatalf("stale image: %v, want the legacy log refused", err)
	}
	if got := dirsOf(t, dir); !slices.Equal(got, all) {
		t.Fatalf("a stale image removed logs: %v", got)
	}

	current := strayImage(20,
		strayTopic("later", idOf(1), []int32{1}),
		strayTopic("renewed", idOf(3), []int32{1}),
		strayTopic("legacy", idOf(9), []int32{1}),
	)
	if err := m.Apply(current); err != nil {
		t.Fatal(err)
	}
	if got, want := dirsOf(t, dir), []string{"later-0", "legacy-0", "renewed-0"}; !slices.Equal(got, want) {
		t.Fatalf("partition dirs after the current image: %v, want %v", got, want)
	}
	for topic, end := range map[string]int64{"later": 3, "renewed": 4, "legacy": 2} {
		p, err := m.Partition(TopicPartition{Topic: topic, Partition: 0})
		if err != nil {
			t.Fatal(err)
		}
		if p.log.LogEndOffset() != end {
			t.Errorf("%s-0 ends at %d, want %d", topic, p.log.LogEndOffset(), end)
		}
	}
	if len(m.OfflineReplicas()) != 0 {
		t.Fatalf("offline replicas %v", m.OfflineReplicas())
	}
}

// eioFS fails every open under dir with EIO, as a dead disk.
type eioFS struct {
	storage.OSFS
	dir string
}

func (f eioFS) OpenFile(name string, flag int, perm os.FileMode) (storage.File, error) {
	if strings.HasPrefix(filepath.Clean(name), f.dir+string(filepath.Separator)) {
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EIO}
	}
	return f.OSFS.OpenFile(name, flag, perm)
}

// TestStrayLogsOfflineDirLeftAlone: a log dir that fails while the stray
// logs are looked for goes offline, and its logs, stray or not, stay;
// the other dir's stray logs go.
func TestStrayLogsOfflineDirLeftAlone(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	writeLogs(t, dirs[:1], strayLog{"gone", 0, idOf(1), 1}, strayLog{"kept", 0, idOf(2), 1})
	writeLogs(t, dirs[1:], strayLog{"gone", 1, idOf(1), 1})
	logs, err := storage.OpenManagerFS(eioFS{dir: filepath.Clean(dirs[0])}, dirs, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	m := newStrayManager(t, logs, func(*metadata.Image) bool { return true }, "")
	err = m.Apply(strayImage(5, strayTopic("kept", idOf(2), []int32{1})))
	if !errors.Is(err, storage.ErrStorage) && err != nil {
		t.Fatal(err)
	}
	if got := logs.OfflineDirs(); !slices.Equal(got, dirs[:1]) {
		t.Fatalf("offline dirs %v", got)
	}
	if got, want := dirsOf(t, dirs[0]), []string{"gone-0", "kept-0"}; !slices.Equal(got, want) {
		t.Fatalf("offline dir holds %v, want %v", got, want)
	}
	if got := dirsOf(t, dirs[1]); len(got) != 0 {
		t.Fatalf("online dir holds %v", got)
	}
}

// TestUnopenedReplicaRemovedWhenReassigned: a replica that was never
// opened in this run (beyond the partition capacity) and is then assigned
// elsewhere has its log removed, as an open one has.
func TestUnopenedReplicaRemovedWhenReassigned(t *testing.T) {
	dir := t.TempDir()
	writeLogs(t, []string{dir}, strayLog{"a", 0, idOf(1), 1}, strayLog{"b", 0, idOf(2), 1})
	logs, err := storage.OpenManager([]string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	m := newStrayManager(t, logs, func(*metadata.Image) bool { return true }, "")
	m.cfg.PartitionCapacity = 1
	a, b := strayTopic("a", idOf(1), []int32{1}), strayTopic("b", idOf(2), []int32{1})
	if err := m.Apply(strayImage(5, a, b)); !errors.Is(err, ErrBeyondCapacity) {
		t.Fatalf("Apply over capacity: %v", err)
	}
	if len(m.OfflineReplicas()) != 1 {
		t.Fatalf("offline replicas %v", m.OfflineReplicas())
	}
	off := m.OfflineReplicas()[0].Topic
	moved := strayTopic(off, idOf(map[string]byte{"a": 1, "b": 2}[off]), []int32{2})
	keep := a
	if off == "a" {
		keep = b
	}
	if err := m.Apply(strayImage(6, keep, moved)); err != nil {
		t.Fatal(err)
	}
	if got, want := dirsOf(t, dir), []string{keep.Name + "-0"}; !slices.Equal(got, want) {
		t.Fatalf("partition dirs %v, want %v", got, want)
	}
}

// TestStrayLogBadPartitionMetadata: a log whose partition.metadata cannot
// be parsed is removed when its partition is not assigned here anyway;
// assigned here, it is kept and its replica offline (KAFKA_STORAGE_ERROR)
// until the file is fixed or removed.
func TestStrayLogBadPartitionMetadata(t *testing.T) {
	dir := t.TempDir()
	writeLogs(t, []string{dir}, strayLog{"hosted", 0, idOf(1), 2}, strayLog{"gone", 0, idOf(2), 2})
	for _, p := range []string{"hosted-0", "gone-0"} {
		if err := os.WriteFile(filepath.Join(dir, p, "partition.metadata"), []byte("garbage"), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	logs, err := storage.OpenManager([]string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	m := newStrayManager(t, logs, func(*metadata.Image) bool { return true }, "")
	err = m.Apply(strayImage(5, strayTopic("hosted", idOf(1), []int32{1})))
	if !errors.Is(err, storage.ErrBadPartitionMetadata) {
		t.Fatalf("Apply: %v, want ErrBadPartitionMetadata", err)
	}
	if got, want := dirsOf(t, dir), []string{"hosted-0"}; !slices.Equal(got, want) {
		t.Fatalf("partition dirs %v, want %v", got, want)
	}
	if _, err := m.Partition(TopicPartition{Topic: "hosted", Partition: 0}); KafkaError(err) != kerr.KafkaStorageError {
		t.Fatalf("hosted-0: %v, want KAFKA_STORAGE_ERROR", err)
	}
	if err := os.Remove(filepath.Join(dir, "hosted-0", "partition.metadata")); err != nil {
		t.Fatal(err)
	}
	if err := m.Apply(strayImage(6, strayTopic("hosted", idOf(1), []int32{1}))); err != nil {
		t.Fatal(err)
	}
	p, err := m.Partition(TopicPartition{Topic: "hosted", Partition: 0})
	if err != nil || p.log.LogEndOffset() != 2 {
		t.Fatalf("hosted-0 after removing the file: %v", err)
	}
}
