package storage

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var (
	topicIDA = [16]byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	topicIDB = [16]byte{0xca, 0xfe, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}
)

// TestPartitionMetadataFormat: Kafka's text format, the id in Kafka's Uuid
// string form, and its reader's checks.
func TestPartitionMetadataFormat(t *testing.T) {
	// Uuid.fromString("vM8TCh5LRVCXzFqO3yFUog") is the Uuid of these bytes
	// (URL-safe base64 without padding, most significant bits first).
	id := [16]byte{0xbc, 0xcf, 0x13, 0x0a, 0x1e, 0x4b, 0x45, 0x50, 0x97, 0xcc, 0x5a, 0x8e, 0xdf, 0x21, 0x54, 0xa2}
	if got, want := string(encodePartitionMetadata(id)), "version: 0\ntopic_id: vM8TCh5LRVCXzFqO3yFUog\n"; got != want {
		t.Fatalf("encoded %q, want %q", got, want)
	}
	for _, id := range [][16]byte{id, topicIDA, topicIDB, {0xff, 0xfe, 0xfd, 0xfc, 0xfb, 0xfa, 0xf9, 0xf8, 0xf7, 0xf6, 0xf5, 0xf4, 0xf3, 0xf2, 0xf1, 0xf0}} {
		got, err := decodePartitionMetadata(encodePartitionMetadata(id))
		if err != nil || got != id {
			t.Fatalf("round trip of %x: %x, %v", id, got, err)
		}
	}
	// As Kafka reads it: ":" then any whitespace, no trailing newline needed.
	if got, err := decodePartitionMetadata([]byte("version:  0\ntopic_id:\tvM8TCh5LRVCXzFqO3yFUog")); err != nil || got != id {
		t.Fatalf("lenient read: %x, %v", got, err)
	}
	for _, bad := range []string{
		"",
		"version: 1\ntopic_id: vM8TCh5LRVCXzFqO3yFUog\n",
		"version 0\ntopic_id: vM8TCh5LRVCXzFqO3yFUog\n",
		"version: 0\n",
		"version: 0\ntopic_id: vM8TCh5LRVCXzFqO3yFU\n",      // 15 bytes
		"version: 0\ntopic_id: vM8TCh5LRVCXzFqO3yFUog==\n",  // padded
		"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n",    // the zero id
		"version: 0\ntopic_id: vM8TCh5LRVCXzFqO3yFUog: x\n", // three fields
	} {
		if _, err := decodePartitionMetadata([]byte(bad)); err == nil {
			t.Errorf("decoded %q", bad)
		}
	}
}

func readIDFile(t *testing.T, dir string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, partitionMetadataFile))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestGetOrCreateTopicWritesID: a new log gets partition.metadata, a
// reopen with the same id adopts the log, and PartitionDirs lists the id.
func TestGetOrCreateTopicWritesID(t *testing.T) {
	dir := t.TempDir()
	m, err := OpenManager([]string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := m.GetOrCreateTopic("orders", 0, topicIDA, false, DefaultLogConfig())
	if err != nil {
		t.Fatal(err)
	}
	if got := readIDFile(t, l.Dir()); got != string(encodePartitionMetadata(topicIDA)) {
		t.Fatalf("partition.metadata %q", got)
	}
	mustAppend(t, l, plain(3))
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m, err = OpenManager([]string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	pds := m.PartitionDirs()
	if len(pds) != 1 || pds[0].Topic != "orders" || pds[0].Partition != 0 || !pds[0].HasTopicID ||
		pds[0].TopicID != topicIDA || pds[0].Open || pds[0].MetadataErr != nil || pds[0].Offline != nil ||
		pds[0].Path != filepath.Join(dir, "orders-0") || pds[0].LogDir != dir {
		t.Fatalf("PartitionDirs %+v", pds)
	}
	l, err = m.GetOrCreateTopic("orders", 0, topicIDA, true, DefaultLogConfig())
	if err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 3 {
		t.Fatalf("reopened log ends at %d, want 3", l.LogEndOffset())
	}
	if pds := m.PartitionDirs(); len(pds) != 1 || !pds[0].Open {
		t.Fatalf("PartitionDirs %+v", pds)
	}
}

// TestGetOrCreateTopicMismatch: a log of another topic id is refused
// (and left alone) unless the id is current; then it is deleted and the
// partition starts empty, with the new id.
func TestGetOrCreateTopicMismatch(t *testing.T) {
	dir := t.TempDir()
	m, err := OpenManager([]string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := m.GetOrCreateTopic("orders", 0, topicIDA, true, DefaultLogConfig())
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, plain(5))
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m, err = OpenManager([]string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	_, err = m.GetOrCreateTopic("orders", 0, topicIDB, false, DefaultLogConfig())
	if !errors.Is(err, ErrInconsistentTopicID) || !errors.Is(err, ErrStorage) {
		t.Fatalf("open with another id, not current: %v, want ErrInconsistentTopicID", err)
	}
	if !strings.Contains(err.Error(), TopicIDString(topicIDA)) || !strings.Contains(err.Error(), TopicIDString(topicIDB)) {
		t.Errorf("error %q does not name both ids", err)
	}
	if got := readIDFile(t, filepath.Join(dir, "orders-0")); got != string(encodePartitionMetadata(topicIDA)) {
		t.Fatalf("a refused open changed partition.metadata: %q", got)
	}
	if m.OfflineDirCount() != 0 {
		t.Fatal("a mismatch took the log dir offline")
	}
	l, err = m.GetOrCreateTopic("orders", 0, topicIDB, true, DefaultLogConfig())
	if err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 0 || l.LogEndOffset() != 0 {
		t.Fatalf("the new topic's log is [%d, %d), want empty", l.LogStartOffset(), l.LogEndOffset())
	}
	if got := readIDFile(t, l.Dir()); got != string(encodePartitionMetadata(topicIDB)) {
		t.Fatalf("partition.metadata %q", got)
	}
	// The stale log was renamed -delete (removed after the delay).
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var deleted int
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "orders-0.") && strings.HasSuffix(e.Name(), deleteDirSuffix) {
			deleted++
		}
	}
	if deleted != 1 {
		t.Fatalf("log dir holds %v, want one orders-0.*-delete", ents)
	}
	mustAppend(t, l, plain(1))
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	// Nothing of the old log comes back.
	m, err = OpenManager([]string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l, err = m.GetOrCreateTopic("orders", 0, topicIDB, false, DefaultLogConfig())
	if err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 1 {
		t.Fatalf("log end offset %d after reopening, want 1", l.LogEndOffset())
	}
}

// TestGetOrCreateTopicLegacyLog: a log written without partition.metadata
// (by GetOrCreate, as kbroker before topic ids) is adopted with its
// records, and gets the file, when the id is current; otherwise it is
// refused and left alone.
func TestGetOrCreateTopicLegacyLog(t *testing.T) {
	dir := t.TempDir()
	m, err := OpenManager([]string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := m.GetOrCreate("orders", 0, DefaultLogConfig())
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, plain(4))
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "orders-0")
	if _, err := os.Stat(filepath.Join(path, partitionMetadataFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("GetOrCreate wrote partition.metadata: %v", err)
	}
	for _, current := range []bool{false, true} {
		m, err = OpenManager([]string{dir}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if pds := m.PartitionDirs(); len(pds) != 1 || pds[0].HasTopicID || pds[0].MetadataErr != nil {
			t.Fatalf("PartitionDirs %+v", pds)
		}
		l, err = m.GetOrCreateTopic("orders", 0, topicIDA, current, DefaultLogConfig())
		if !current {
			if !errors.Is(err, ErrInconsistentTopicID) {
				t.Fatalf("not current: %v, want ErrInconsistentTopicID", err)
			}
			if _, err := os.Stat(filepath.Join(path, partitionMetadataFile)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a refused open wrote partition.metadata: %v", err)
			}
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if l.LogEndOffset() != 4 {
			t.Fatalf("adopted log ends at %d, want 4", l.LogEndOffset())
		}
		_, err := os.Stat(filepath.Join(path, partitionMetadataFile))
		if current != (err == nil) {
			t.Fatalf("current %v: partition.metadata: %v", current, err)
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if got := readIDFile(t, path); got != string(encodePartitionMetadata(topicIDA)) {
		t.Fatalf("partition.metadata %q", got)
	}
}

// TestGetOrCreateTopicBadFile: an unparsable partition.metadata refuses
// the open with ErrBadPartitionMetadata (a storage error: the replica is
// offline), deletes nothing, and leaves the directory online.
func TestGetOrCreateTopicBadFile(t *testing.T) {
	dir := t.TempDir()
	m, err := OpenManager([]string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := m.GetOrCreateTopic("orders", 0, topicIDA, true, DefaultLogConfig())
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, plain(2))
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "orders-0", partitionMetadataFile)
	if err := os.WriteFile(file, []byte("version: x\ntopic_id: x\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	m, err = OpenManager([]string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if pds := m.PartitionDirs(); len(pds) != 1 || !errors.Is(pds[0].MetadataErr, ErrBadPartitionMetadata) || pds[0].HasTopicID {
		t.Fatalf("PartitionDirs %+v", pds)
	}
	for _, current := range []bool{false, true} {
		_, err = m.GetOrCreateTopic("orders", 0, topicIDA, current, DefaultLogConfig())
		if !errors.Is(err, ErrBadPartitionMetadata) || !errors.Is(err, ErrStorage) || !strings.Contains(err.Error(), file) {
			t.Fatalf("open with a bad partition.metadata: %v", err)
		}
	}
	if m.OfflineDirCount() != 0 {
		t.Fatal("a bad partition.metadata took the log dir offline")
	}
	if _, err := os.Stat(filepath.Join(dir, "orders-0", "00000000000000000000.log")); err != nil {
		t.Fatalf("the log was touched: %v", err)
	}
	// Removed by the operator: adopted by name.
	mustRemove(t, file)
	l, err = m.GetOrCreateTopic("orders", 0, topicIDA, true, DefaultLogConfig())
	if err != nil || l.LogEndOffset() != 2 {
		t.Fatalf("after removing the file: %v", err)
	}
}

// TestGetOrCreateTopicWriteFails: a new partition whose partition.metadata
// cannot be written leaves no directory behind, and the disk error takes
// the directory offline like any other.
func TestGetOrCreateTopicWriteFails(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	fsys := &dirFaultFS{dir: dirs[0]}
	m, err := OpenManagerFS(fsys, dirs, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	fsys.failing.Store(true)
	if _, err := m.GetOrCreateTopic("orders", 0, topicIDA, true, DefaultLogConfig()); !errors.Is(err, ErrStorage) {
		t.Fatalf("GetOrCreateTopic on a failing disk: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dirs[0], "orders-0")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the new partition's directory stayed: %v", err)
	}
	if got := m.OfflineDirs(); len(got) != 1 || got[0] != dirs[0] {
		t.Fatalf("offline dirs %v", got)
	}
	// The next try goes to the healthy directory.
	l, err := m.GetOrCreateTopic("orders", 0, topicIDA, true, DefaultLogConfig())
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(l.Dir()) != dirs[1] {
		t.Fatalf("created in %s", l.Dir())
	}
	if pds := m.PartitionDirs(); len(pds) != 1 || pds[0].LogDir != dirs[1] || pds[0].TopicID != topicIDA {
		t.Fatalf("PartitionDirs %+v", pds)
	}
}

// TestMoveLogKeepsTopicID: AlterReplicaLogDirs moves partition.metadata
// with the log.
func TestMoveLogKeepsTopicID(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	m, err := OpenManager(dirs, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l, err := m.GetOrCreateTopic("orders", 0, topicIDA, true, DefaultLogConfig())
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, plain(3))
	to := dirs[0]
	if filepath.Dir(l.Dir()) == to {
		to = dirs[1]
	}
	if err := m.MoveLog(t.Context(), "orders", 0, to); err != nil {
		t.Fatal(err)
	}
	if got := readIDFile(t, filepath.Join(to, "orders-0")); got != string(encodePartitionMetadata(topicIDA)) {
		t.Fatalf("moved partition.metadata %q", got)
	}
	if pds := m.PartitionDirs(); len(pds) != 1 || pds[0].LogDir != to || pds[0].TopicID != topicIDA || !pds[0].Open {
		t.Fatalf("PartitionDirs %+v", pds)
	}
}
