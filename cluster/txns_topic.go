package cluster

// __transaction_state itself: its creation on first use (FindCoordinator
// with key type 1, or InitProducerId) and the answer to FindCoordinator.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/metadata"
)

func (c *txnCoordinator) ensureStateTopic(ctx context.Context) error {
	if _, ok := c.host.Image().Topics[txnStateTopic]; ok {
		return nil
	}
	c.createMu.Lock()
	defer c.createMu.Unlock()
	img := c.host.Image()
	if _, ok := img.Topics[txnStateTopic]; ok {
		return nil
	}
	rf := c.cfg.ReplicationFactor
	if live := int16(len(img.UnfencedBrokerIDs())); live < rf {
		rf = max(live, 1)
	}
	spec := metadata.TopicSpec{
		Name:              txnStateTopic,
		NumPartitions:     c.cfg.NumPartitions,
		ReplicationFactor: rf,
		Configs: map[string]string{
			"cleanup.policy":      "compact",
			"compression.type":    "uncompressed",
			"retention.ms":        "-1",
			"retention.bytes":     "-1",
			"min.insync.replicas": strconv.Itoa(int(min(c.cfg.MinISR, int32(rf)))),
		},
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := c.host.CreateStateTopic(ctx, spec)
	if err != nil && !errors.Is(err, metadata.ErrTopicExists) {
		return fmt.Errorf("creating %s (%d partitions, replication factor %d): %w", txnStateTopic, spec.NumPartitions, rf, err)
	}
	c.logger.Info("created "+txnStateTopic, "partitions", spec.NumPartitions, "replication.factor", rf)
	return nil
}

// coordinatorFor answers FindCoordinator for a transactional id.
func (c *txnCoordinator) coordinatorFor(ctx context.Context, id, listener string) (int32, metadata.Endpoint, error) {
	if err := c.ensureStateTopic(ctx); err != nil {
		c.logger.Warn("finding transaction coordinator", "transactional.id", id, "err", err)
		return -1, metadata.Endpoint{}, kerr.CoordinatorNotAvailable
	}
	img := c.host.Image()
	mp, ok := img.Partition(txnStateTopic, c.partitionFor(id))
	if !ok || mp.Leader == metadata.NoLeader {
		return -1, metadata.Endpoint{}, kerr.CoordinatorNotAvailable
	}
	ep, ok := img.BrokerEndpoint(mp.Leader, listener)
	if !ok {
		return -1, metadata.Endpoint{}, kerr.CoordinatorNotAvailable
	}
	return mp.Leader, ep, nil
}
