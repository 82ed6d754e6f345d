package kafkaapi

import (
	"errors"

	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/storage"
)

// hostedPartition finds a partition this broker hosts. A partition that
// exists in the metadata but lives elsewhere is NOT_LEADER_OR_FOLLOWER
// (the client's metadata is stale); one that does not exist at all is
// UNKNOWN_TOPIC_OR_PARTITION; one hosted here whose log failed to open is
// KAFKA_STORAGE_ERROR (replication/offline.go).
func (h *Handlers) hostedPartition(tp replication.TopicPartition) (*replication.Partition, error) {
	p, err := h.replicas.Partition(tp)
	if err == nil || errors.Is(err, storage.ErrStorage) {
		return p, err
	}
	if _, ok := h.store.Image().Partition(tp.Topic, tp.Partition); ok {
		return nil, replication.ErrNotLeader
	}
	return nil, replication.ErrUnknownTopicOrPartition
}
