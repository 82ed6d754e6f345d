package cluster

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/metadata/features"
	"github.com/kbroker/kbroker/replication"
)

// maxISRChangesInFlight bounds the single ISR changes (ChangePartition) a
// broker has in flight to the controller at once, before metadata.version
// 3 brings AlterPartition.
//
// Each single change is a controller request and a raft entry of its own.
// A broker restarted with 10,000 partitions, or one whose followers all
// fell behind at once, had 10,000 of them in flight: as many connections
// to the active controller from every broker (one per call then), which
// exhausted the controller's file-descriptor limit, so raft and the
// heartbeats could not connect either and the quorum kept electing
// (kbroker bench --mode scale). Bounded, the changes queue here instead;
// one that waits past its deadline fails as any timed-out proposal does,
// and replication proposes it again at the next fetch or ISR check.
const maxISRChangesInFlight = 16

// isrLimiter bounds the single changes in flight.
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

// each sends changes one ChangePartition each, from at most cap(slots)
// goroutines that it waits for, and returns each one's error.
func (l *isrLimiter) each(ctx context.Context, changes []metadata.PartitionChange) []error {
	errs := make([]error, len(changes))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(len(changes), cap(l.slots)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(changes); i = int(next.Add(1) - 1) {
				errs[i] = l.ChangePartition(ctx, changes[i])
			}
		})
	}
	wg.Wait()
	return errs
}

// isrChanger is the replication.ISRBatcher given to the replica manager:
// the ISR changes of the partitions this broker leads go to the
// controller in AlterPartition requests of many partitions (one raft
// entry each) once the cluster is at metadata.version 3, which every
// voter and broker then supports; before, one ChangePartition each.
type isrChanger struct {
	*isrLimiter
	store  *metadata.Store
	broker int32
}

func newISRChanger(store *metadata.Store, broker int32) *isrChanger {
	return &isrChanger{isrLimiter: newISRLimiter(store, maxISRChangesInFlight), store: store, broker: broker}
}

func (c *isrChanger) AlterPartition(ctx context.Context, changes []metadata.PartitionChange) ([]error, error) {
	if c.store.Image().Features()[features.MetadataVersion] >= features.MetadataVersionAlterPartitionBatch {
		return c.store.AlterPartition(ctx, c.broker, changes)
	}
	return c.each(ctx, changes), nil
}
