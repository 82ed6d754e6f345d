package replication

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/kbroker/kbroker/storage"
)

// A replica whose log cannot be opened (EMFILE once the process is out of
// file descriptors, a full or failed disk) is offline on this broker. It
// is never left half open: storage removes the directory of a new
// partition that failed (no orphan for the next start to load), the
// error is logged with the partition, and requests for it get
// KAFKA_STORAGE_ERROR (Kafka's answer for a replica on a failed log dir)
// rather than NOT_LEADER_OR_FOLLOWER, which clients would retry as a
// routine leader move. Every Apply retries the open, so the replica comes
// back once descriptors or disk space are freed.
//
// The broker reports its offline replicas to the controller with each
// heartbeat (OfflineReplicas; cluster liveness.go), as Kafka's heartbeat
// reports offline log dirs, and the controller moves leadership to another
// ISR member. The partition-capacity check (metadata limits.go) is what
// keeps CreateTopics from getting here through file-descriptor exhaustion.

// OfflineReplicas lists, sorted, the replicas this broker should host but
// cannot open.
func (m *Manager) OfflineReplicas() []TopicPartition {
	m.mu.RLock()
	out := make([]TopicPartition, 0, len(m.mu.offline))
	for tp := range m.mu.offline {
		out = append(out, tp)
	}
	m.mu.RUnlock()
	slices.SortFunc(out, func(a, b TopicPartition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}

// ErrBeyondCapacity is why a replica stays closed when the broker already
// has ManagerConfig.PartitionCapacity replicas open.
var ErrBeyondCapacity = errors.New("beyond this broker's partition capacity")

// markOfflineLocked records that tp's log failed to open and returns the
// error to report, wrapping storage.ErrStorage so that it maps to
// KAFKA_STORAGE_ERROR.
func (m *Manager) markOfflineLocked(tp TopicPartition, err error) error {
	err = fmt.Errorf("%w: replica %s offline: opening its log: %w", storage.ErrStorage, tp, err)
	if _, again := m.mu.offline[tp]; !again {
		m.cfg.Logger.Error("replica offline: cannot open its log", "topic", tp.Topic, "partition", tp.Partition, "err", err)
	}
	m.mu.offline[tp] = err
	return err
}

// missingErr is Partition's error for a partition not open on this broker.
func (m *Manager) missingErr(tp TopicPartition) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err, ok := m.mu.offline[tp]; ok {
		return err
	}
	return ErrUnknownTopicOrPartition
}
