package replication

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/storage"
)

// Stray logs (Kafka's KAFKA-14616, 3.7: LogManager.isStrayKraftReplica at
// the broker's first metadata image). Apply removes the partitions it
// opened when the image stops listing this broker, but a broker that was
// down meanwhile (its replica reassigned away, or the topic deleted)
// finds the partition's directory on disk when it starts. Left there, the
// directory would be kept forever, and adopted by a topic created again
// under the same name: the new topic would serve the old one's records.
//
// So the first current image applied (ManagerConfig.Current: it holds
// everything the quorum had committed when the broker started) removes,
// before anything is opened, every partition directory storage lists
// (PartitionDirs, every log dir) that is not open and
//
//   - whose topic is not in the image, or
//   - whose partition the image does not assign to this broker, or
//   - whose partition.metadata names another topic id than the image's
//     topic of that name (deleted and created again).
//
// The removal is storage's Delete: the directory is renamed
// <topic>-<partition>.<id>-delete and removed after file.delete.delay.ms
// (or at the next start). Internal topics (__consumer_offsets,
// __transaction_state) are topics of the image like any other. Left
// alone: directories in an offline log dir (nothing is read or removed
// there; the next start with the disk back decides), a directory whose
// partition.metadata cannot be parsed but whose partition is assigned
// here (the open reports it, and the replica stays offline), the
// metadata log's directory, and a directory without partition.metadata
// (written before kbroker kept topic ids) whose partition is assigned
// here, which is adopted by name (Kafka treats those as stray; kbroker
// keeps the logs its earlier versions wrote).
//
// Later images find nothing stray: Apply removes what it opened, and a
// replica it never opened (offline: beyond the partition capacity, or its
// open failed) when the image stops listing this broker
// (removeUnopenedLocked).
//
// An image that is not current decides nothing: a broker restarted with a
// metadata log behind the quorum's (a Raft follower replays its snapshot
// first) may not see a topic yet, or see the older topic of a name whose
// log on disk is the newer one's. Until a current image, no directory is
// removed, and a log of another topic id, or an old one without
// partition.metadata, is refused (storage ErrInconsistentTopicID: the
// replica is offline, its log untouched, until a current image decides).

// metadataTopic is the metadata log's name in Kafka (its directory is
// __cluster_metadata-0 there); never a partition log.
const metadataTopic = "__cluster_metadata"

// removeStrayLogsLocked removes the stray partition directories (see
// above) for img, which is current.
func (m *Manager) removeStrayLogsLocked(img *metadata.Image) error {
	var errs []error
	removed := 0
	for _, pd := range m.cfg.Logs.PartitionDirs() {
		tp := TopicPartition{Topic: pd.Topic, Partition: pd.Partition}
		if pd.Open || pd.Offline != nil || pd.Topic == metadataTopic || m.isMetadataLogDir(pd.Path) {
			continue
		}
		if _, ok := m.mu.partitions[tp]; ok {
			continue
		}
		reason := strayReason(img, m.cfg.NodeID, pd)
		if reason == "" {
			if pd.MetadataErr != nil {
				// Opening it checks again (and refuses a bad file: the
				// replica stays offline until it is fixed or removed).
				m.cfg.Logger.Error("cannot read the topic id of a hosted partition's log",
					"topic", pd.Topic, "partition", pd.Partition, "dir", pd.Path, "err", pd.MetadataErr)
			}
			continue
		}
		m.cfg.Logger.Warn("removing stray log", "topic", pd.Topic, "partition", pd.Partition, "dir", pd.Path,
			"reason", reason)
		if err := m.cfg.Logs.Delete(pd.Topic, pd.Partition); err != nil {
			if !errors.Is(err, storage.ErrStorage) {
				err = fmt.Errorf("%w: %w", storage.ErrStorage, err)
			}
			errs = append(errs, fmt.Errorf("removing stray log %s: %w", tp, err))
			continue
		}
		removed++
	}
	if removed > 0 {
		m.cfg.Logger.Info("removed stray logs", "logs", removed, "image_offset", img.Offset)
	}
	return errors.Join(errs...)
}

// strayReason says why the partition directory pd is stray under img, or
// "" if it is not.
func strayReason(img *metadata.Image, nodeID int32, pd storage.PartitionDir) string {
	t, ok := img.Topics[pd.Topic]
	switch {
	case !ok && pd.HasTopicID:
		return fmt.Sprintf("topic id %s no longer exists", storage.TopicIDString(pd.TopicID))
	case !ok:
		return "its topic no longer exists"
	case pd.HasTopicID && pd.TopicID != t.ID:
		return fmt.Sprintf("topic id %s is not the current topic's %s (deleted and created again)",
			storage.TopicIDString(pd.TopicID), storage.TopicIDString(t.ID))
	case int(pd.Partition) >= len(t.Partitions):
		return "the topic has no such partition"
	case !slices.Contains(t.Partitions[pd.Partition].Replicas, nodeID):
		return fmt.Sprintf("the replicas %v do not include this broker", t.Partitions[pd.Partition].Replicas)
	}
	return ""
}

// isMetadataLogDir reports whether path is the metadata log's directory
// (metadata.log.dir may name one inside a log dir that reads as a
// partition's).
func (m *Manager) isMetadataLogDir(path string) bool {
	return m.cfg.MetadataLogDir != "" && filepath.Clean(path) == filepath.Clean(m.cfg.MetadataLogDir)
}

// removeUnopenedLocked removes from disk the log of tp, which this broker
// no longer hosts and never opened in this run (it was offline: beyond
// the partition capacity, or its open failed), unless its log dir is
// offline. Called with a current image only.
func (m *Manager) removeUnopenedLocked(tp TopicPartition) error {
	dir, ok := m.cfg.Logs.DirOf(tp.Topic, tp.Partition)
	if !ok || slices.Contains(m.cfg.Logs.OfflineDirs(), dir) {
		return nil
	}
	if err := m.cfg.Logs.Delete(tp.Topic, tp.Partition); err != nil {
		return fmt.Errorf("deleting log %s: %w", tp, err)
	}
	m.cfg.Logger.Info("removed the log of a partition no longer hosted", "topic", tp.Topic, "partition", tp.Partition)
	return nil
}
