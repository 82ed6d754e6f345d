package cluster

import (
	"github.com/kbroker/kbroker/replication"
)

// hostedPartition finds a partition this broker hosts. A partition that
// exists in the metadata but lives elsewhere is NOT_LEADER_OR_FOLLOWER
// (the client's metadata is stale); one that does not exist at all is
// UNKNOWN_TOPIC_OR_PARTITION.
func (n *Node) hostedPartition(tp replication.TopicPartition) (*replication.Partition, error) {
	p, err := n.replicas.Partition(tp)
	if err == nil {
		return p, nil
	}
	if _, ok := n.store.Image().Partition(tp.Topic, tp.Partition); ok {
		return nil, replication.ErrNotLeader
	}
	return nil, replication.ErrUnknownTopicOrPartition
}
