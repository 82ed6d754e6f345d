package cluster

// The transaction coordinator's view of the Node (txncoord.Host); its
// marker sender's inter-broker clients are txncoord.MarkerClients.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/coordinator"
	"github.com/kbroker/kbroker/cluster/txncoord"
	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/replication"
)

type txnsNodeHost struct {
	n       *Node
	clients *txncoord.MarkerClients
}

func (h txnsNodeHost) Image() *metadata.Image { return h.n.store.Image() }

func (h txnsNodeHost) StateReplica(p int32) (coordinator.OffsetsReplica, error) {
	part, err := h.n.replicas.Partition(replication.TopicPartition{Topic: txncoord.StateTopic, Partition: p})
	if err != nil {
		return nil, err
	}
	return partitionReplica{part}, nil
}

func (h txnsNodeHost) CreateStateTopic(ctx context.Context, spec metadata.TopicSpec) error {
	err := h.n.store.CreateTopics(ctx, []metadata.TopicSpec{spec}, false)[0]
	if err != nil && !errors.Is(err, metadata.ErrTopicExists) {
		return err
	}
	if aerr := h.n.replicas.Apply(h.n.store.Image()); aerr != nil {
		h.n.logger.Warn("opening "+txncoord.StateTopic+" partitions", "component", "txns", "err", aerr)
	}
	return err
}

func (h txnsNodeHost) AllocateProducerID(ctx context.Context) (int64, error) {
	return h.n.producerIDs.Allocate(ctx)
}

func (h txnsNodeHost) WriteTxnMarkers(ctx context.Context, broker int32, req *kmsg.WriteTxnMarkersRequest) (*kmsg.WriteTxnMarkersResponse, error) {
	if broker == h.n.cfg.NodeID {
		return h.n.handlers.WriteTxnMarkers(ctx, req), nil
	}
	ep, ok := h.n.store.Image().BrokerEndpoint(broker, h.n.cfg.InterBrokerListenerName)
	if !ok {
		return nil, fmt.Errorf("broker %d has no %s endpoint", broker, h.n.cfg.InterBrokerListenerName)
	}
	return h.clients.WriteTxnMarkers(ctx, broker, ep, req)
}

// txnsConfigOf is the coordinator's part of a node's config.
func txnsConfigOf(n *Node) txncoord.Config {
	return txncoord.Config{
		NumPartitions:     n.cfg.TransactionStateLogNumPartitions,
		ReplicationFactor: n.cfg.TransactionStateLogReplicationFactor,
		MinISR:            n.cfg.TransactionStateLogMinISR,
		MaxTimeout:        time.Duration(n.cfg.TransactionMaxTimeoutMs) * time.Millisecond,
		IDExpiration:      time.Duration(n.cfg.TransactionalIDExpirationMs) * time.Millisecond,
		AbortInterval:     time.Duration(n.cfg.TransactionAbortTimedOutTransactionCleanupIntervalMs) * time.Millisecond,
	}
}
