package cluster

import (
	"context"
	"fmt"

	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/replication"
)

// maxISRChangesInFlight bounds the ISR changes (ChangePartition) a broker
// has in flight to the controller at once.
//
// replication proposes each partition's ISR change on its own, and each
// controller RPC travels on a connection of its own (metadata/rpc.go). A
// broker restarted with 10,000 partitions, or one whose followers all
// fell behind at once, had 10,000 of them in flight: as many connections
// to the active controller from every broker, which exhausted the
// controller's file-descriptor limit, so raft and the heartbeats could
// not connect either and the quorum kept electing (kbroker bench --mode
// scale). Bounded, the changes queue here instead; one that waits past
// its deadline fails as any timed-out proposal does, and replication
// proposes it again at the next fetch or ISR check. Batching changes in
// one request (Kafka's AlterPartition carries many partitions) would
// remove the queue; it needs a metadata operation of its own.
const maxISRChangesInFlight = 16

// isrLimiter is the replication.ISRChanger given to the replica manager.
type isrLimiter struct {
	next  replication.ISRChanger
	slots chan struct{}
}

func newISRLimiter(next replication.ISRChanger, n int) *isrLimiter {
	return &isrLimiter{next: next, slots: make(chan struct{}, n)}
}

func (l *isrLimiter) ChangePartition(ctx context.Context, c metadata.PartitionChange) error {
	select {
	case l.slots <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("waiting for one of %d ISR changes in flight: %w", cap(l.slots), ctx.Err())
	}
	defer func() { <-l.slots }()
	return l.next.ChangePartition(ctx, c)
}
