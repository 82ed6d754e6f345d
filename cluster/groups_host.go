package cluster

// The group coordinator's view of the Node (groupcoord.Host), and of a
// replica (coordinator.OffsetsReplica), as adapters: the coordinator sees these few
// methods rather than the whole Node.

import (
	"context"
	"errors"
	"time"

	"github.com/kbroker/kbroker/cluster/coordinator"
	"github.com/kbroker/kbroker/cluster/group"
	"github.com/kbroker/kbroker/cluster/groupcoord"
	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/wire/record"
)

// groupsNodeHost is the groupcoord.Host of a Node. The metadata store and the
// replica manager exist only once Run opened them; the coordinator uses
// them only from then on (its hooks, its goroutine and the requests all
// start after).
type groupsNodeHost struct{ n *Node }

func (h groupsNodeHost) Image() *metadata.Image { return h.n.store.Image() }

func (h groupsNodeHost) OffsetsReplica(p int32) (coordinator.OffsetsReplica, error) {
	part, err := h.n.replicas.Partition(replication.TopicPartition{Topic: groupcoord.OffsetsTopic, Partition: p})
	if err != nil {
		return nil, err
	}
	return partitionReplica{part}, nil
}

func (h groupsNodeHost) CreateOffsetsTopic(ctx context.Context, spec metadata.TopicSpec) error {
	err := h.n.store.CreateTopics(ctx, []metadata.TopicSpec{spec}, false)[0]
	if err != nil && !errors.Is(err, metadata.ErrTopicExists) {
		return err
	}
	// Open this broker's replicas now rather than at the next image
	// watch, so the coordinator's partitions load as soon as they can.
	if aerr := h.n.replicas.Apply(h.n.store.Image()); aerr != nil {
		h.n.logger.Warn("opening __consumer_offsets partitions", "component", "groups", "err", aerr)
	}
	return err
}

// groupsConfigOf is the coordinator's part of a node's config.
func groupsConfigOf(n *Node) groupcoord.Config {
	return groupcoord.Config{
		OffsetsTopicNumPartitions:     n.cfg.OffsetsTopicNumPartitions,
		OffsetsTopicReplicationFactor: n.cfg.OffsetsTopicReplicationFactor,
		InitialRebalanceDelay:         time.Duration(n.cfg.GroupInitialRebalanceDelayMs) * time.Millisecond,
		OffsetsRetention:              time.Duration(n.cfg.OffsetsRetentionMinutes) * time.Minute,
		Consumer: group.ConsumerConfig{
			SessionTimeout:    time.Duration(n.cfg.GroupConsumerSessionTimeoutMs) * time.Millisecond,
			HeartbeatInterval: time.Duration(n.cfg.GroupConsumerHeartbeatIntervalMs) * time.Millisecond,
			Assignors:         n.cfg.GroupConsumerAssignors,
		},
	}
}

// partitionReplica is the coordinator.OffsetsReplica of a replicated partition.
type partitionReplica struct{ p *replication.Partition }

func (r partitionReplica) IsLeader() bool        { return r.p.IsLeader() }
func (r partitionReplica) LeaderEpoch() int32    { return r.p.State().LeaderEpoch }
func (r partitionReplica) LogStartOffset() int64 { return r.p.LogStartOffset() }
func (r partitionReplica) LogEndOffset() int64   { return r.p.LogEndOffset() }
func (r partitionReplica) HighWatermark() int64  { return r.p.HighWatermark() }

func (r partitionReplica) ReadLog(offset int64, maxBytes int, upperBound int64) ([]byte, error) {
	return r.p.Log().Read(offset, maxBytes, upperBound, true)
}

func (r partitionReplica) ProducerState(producerID int64) (int16, int32, bool) {
	return r.p.Log().ProducerState(producerID)
}

func (r partitionReplica) AppendAsLeader(batch record.Batch) (int64, error) {
	res, err := r.p.AppendAsLeader(batch, -1)
	if err != nil {
		return -1, err
	}
	return res.LastOffset, nil
}
