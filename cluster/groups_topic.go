package cluster

// __consumer_offsets itself: its creation on the first FindCoordinator,
// and the answer to FindCoordinator (the leader of a group's partition).

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/metadata"
)

// ensureOffsetsTopic creates __consumer_offsets if it does not exist.
func (c *groupCoordinator) ensureOffsetsTopic(ctx context.Context) error {
	if _, ok := c.host.Image().Topics[offsetsTopic]; ok {
		return nil
	}
	c.createMu.Lock()
	defer c.createMu.Unlock()
	img := c.host.Image()
	if _, ok := img.Topics[offsetsTopic]; ok {
		return nil
	}
	rf := c.cfg.OffsetsTopicReplicationFactor
	if live := int16(len(img.UnfencedBrokerIDs())); live < rf {
		rf = max(live, 1)
	}
	spec := metadata.TopicSpec{
		Name:              offsetsTopic,
		NumPartitions:     c.cfg.OffsetsTopicNumPartitions,
		ReplicationFactor: rf,
		Configs: map[string]string{
			"cleanup.policy":   "compact",
			"compression.type": "uncompressed",
			"retention.ms":     "-1",
			"retention.bytes":  "-1",
		},
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := c.host.CreateOffsetsTopic(ctx, spec)
	if err != nil && !errors.Is(err, metadata.ErrTopicExists) {
		return fmt.Errorf("creating %s (%d partitions, replication factor %d): %w", offsetsTopic, spec.NumPartitions, rf, err)
	}
	c.logger.Info("created "+offsetsTopic, "partitions", spec.NumPartitions, "replication.factor", rf)
	return nil
}

// coordinatorFor answers FindCoordinator for a group: the leader of its
// partition, creating the topic first if needed.
func (c *groupCoordinator) coordinatorFor(ctx context.Context, groupID, listener string) (int32, metadata.Endpoint, error) {
	if _, ok := c.host.Image().Topics[offsetsTopic]; !ok {
		if err := c.ensureOffsetsTopic(ctx); err != nil {
			c.logger.Warn("finding coordinator", "group", groupID, "err", err)
			return -1, metadata.Endpoint{}, kerr.CoordinatorNotAvailable
		}
	}
	img := c.host.Image()
	mp, ok := img.Partition(offsetsTopic, c.partitionFor(groupID))
	if !ok || mp.Leader == metadata.NoLeader {
		return -1, metadata.Endpoint{}, kerr.CoordinatorNotAvailable
	}
	ep, ok := img.BrokerEndpoint(mp.Leader, listener)
	if !ok {
		return -1, metadata.Endpoint{}, kerr.CoordinatorNotAvailable
	}
	return mp.Leader, ep, nil
}
