package storage

import (
	"cmp"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/kbroker/kbroker/storage/logfs"
)

// The topic id of a log (Kafka's PartitionMetadataFile, KIP-516). Every
// partition directory holds partition.metadata, Kafka's text format:
//
//	version: 0
//	topic_id: <the 16-byte id, URL-safe base64 without padding (Kafka's Uuid.toString)>
//
// A topic deleted and created again under the same name gets a new id, so
// the file tells a log of the old topic (left on disk by a broker that was
// down when the topic was deleted) from the new topic's: GetOrCreateTopic
// refuses or replaces such a stale log instead of serving its records
// under the new topic, and PartitionDirs lists each directory's id for the
// replica manager's removal of stray logs at start (replication stray.go).
// The file is written atomically (a .tmp, fsync, rename, directory fsync)
// through the Manager's FS, when a log is created for a topic id, and on
// a log written before kbroker kept topic ids when it is adopted (under
// metadata known current only).

// partitionMetadataFile is the name of the file in a partition directory.
const partitionMetadataFile = "partition.metadata"

// ErrInconsistentTopicID (Kafka's InconsistentTopicIdException): the log
// on disk belongs to another topic id than the one it is opened for. It
// wraps ErrStorage (KAFKA_STORAGE_ERROR): the replica stays offline.
var ErrInconsistentTopicID = fmt.Errorf("%w: the log belongs to another topic id", ErrStorage)

// ErrBadPartitionMetadata: a partition.metadata file that cannot be parsed
// (Kafka fails the log's directory on it; kbroker only the partition,
// which stays offline until the file is fixed or removed). It wraps
// ErrStorage.
var ErrBadPartitionMetadata = fmt.Errorf("%w: bad %s", ErrStorage, partitionMetadataFile)

// TopicIDString is the Kafka string form of a topic id (Uuid.toString):
// URL-safe base64 without padding.
func TopicIDString(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// encodePartitionMetadata is the contents of partition.metadata for id.
func encodePartitionMetadata(id [16]byte) []byte {
	return fmt.Appendf(nil, "version: 0\ntopic_id: %s\n", TopicIDString(id))
}

// partitionMetadataField splits a line as Kafka's reader does (on ":"
// followed by whitespace, exactly two fields).
var partitionMetadataField = regexp.MustCompile(`:\s+`)

// decodePartitionMetadata parses partition.metadata as Kafka's
// PartitionMetadataReadBuffer: version 0, then a topic id that is not the
// zero id.
func decodePartitionMetadata(data []byte) ([16]byte, error) {
	lines := strings.Split(strings.TrimRight(string(data), "\r\n"), "\n")
	field := func(i int) (string, string, error) {
		if i >= len(lines) {
			return "", "", errors.New("missing line")
		}
		kv := partitionMetadataField.Split(strings.TrimRight(lines[i], "\r"), -1)
		if len(kv) != 2 {
			return "", "", fmt.Errorf("malformed line %q", lines[i])
		}
		return kv[0], kv[1], nil
	}
	_, v, err := field(0)
	if err != nil {
		return [16]byte{}, err
	}
	if n, err := strconv.Atoi(v); err == nil && n > 0 {
		return [16]byte{}, fmt.Errorf("%w: partition.metadata version %d, this build reads 0", ErrNewerFormat, n)
	} else if err != nil || n != 0 {
		return [16]byte{}, fmt.Errorf("unrecognized version %q", v)
	}
	_, s, err := field(1)
	if err != nil {
		return [16]byte{}, err
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(raw) != 16 {
		return [16]byte{}, fmt.Errorf("unparsable topic id %q", s)
	}
	id := [16]byte(raw)
	if id == ([16]byte{}) {
		return [16]byte{}, errors.New("zero topic id")
	}
	return id, nil
}

// readPartitionMetadata reads the topic id of the partition directory
// dir. found is false when the file does not exist (a log written before
// kbroker kept topic ids, or a crash between creating the directory and
// writing the file); an unparsable file is ErrBadPartitionMetadata.
func readPartitionMetadata(fsys FS, dir string) (id [16]byte, found bool, err error) {
	path := filepath.Join(dir, partitionMetadataFile)
	data, err := logfs.ReadFile(fsys, path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return id, false, nil
	case err != nil:
		return id, false, fmt.Errorf("%w: read %s: %w", ErrStorage, path, err)
	}
	id, err = decodePartitionMetadata(data)
	if errors.Is(err, ErrNewerFormat) {
		// A storage error too: the replica stays offline, reported.
		return id, false, fmt.Errorf("%w: %s: %w", ErrStorage, path, err)
	}
	if err != nil {
		return id, false, fmt.Errorf("%w: %s: %v", ErrBadPartitionMetadata, path, err)
	}
	return id, true, nil
}

// writePartitionMetadata writes id to dir's partition.metadata, atomically
// and durably.
func writePartitionMetadata(fsys FS, dir string, id [16]byte) error {
	path := filepath.Join(dir, partitionMetadataFile)
	if err := logfs.WriteFileAtomic(fsys, dir, path, encodePartitionMetadata(id)); err != nil {
		return fmt.Errorf("%w: write %s: %w", ErrStorage, path, err)
	}
	return nil
}

// PartitionDir is a partition directory found in a log directory, as
// PartitionDirs lists it.
type PartitionDir struct {
	Topic     string
	Partition int32
	// Path is the partition directory, LogDir the log directory holding it.
	Path, LogDir string
	// TopicID is the id in its partition.metadata; HasTopicID is false
	// when the file does not exist (a log written before kbroker kept topic
	// ids).
	TopicID    [16]byte
	HasTopicID bool
	// MetadataErr: partition.metadata exists but could not be read or
	// parsed (ErrBadPartitionMetadata); the topic id is unknown.
	MetadataErr error
	// Offline is why its log directory is offline; nothing was read there.
	Offline error
	// Open: the log is open in this Manager.
	Open bool
}

// PartitionDirs lists every partition directory of every log directory,
// open or not (opened logs, and the directories found by OpenManager that
// no one has opened since), with the topic id each one's partition.metadata
// holds, sorted by topic, partition and log directory. The replica manager
// removes the stray ones (of topics deleted, replicas moved away, or a
// topic of another id) once it knows the current metadata. Directories of
// offline log directories are listed with Offline and not read.
func (m *Manager) PartitionDirs() []PartitionDir {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []PartitionDir
	for _, d := range m.dirs {
		for tp := range d.partitions {
			pd := PartitionDir{Topic: tp.topic, Partition: tp.partition, LogDir: d.path,
				Path: filepath.Join(d.path, tp.dirName())}
			_, pd.Open = m.mu.logs[tp]
			if pd.Offline = d.offline(); pd.Offline == nil {
				pd.TopicID, pd.HasTopicID, pd.MetadataErr = readPartitionMetadata(m.fs, pd.Path)
				if pd.Offline = d.offline(); pd.Offline != nil {
					// Reading failed the directory.
					pd.MetadataErr = nil
				}
			}
			out = append(out, pd)
		}
	}
	slices.SortFunc(out, func(a, b PartitionDir) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition),
			strings.Compare(a.LogDir, b.LogDir))
	})
	return out
}
