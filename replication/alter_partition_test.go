package replication

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/testutil"
	"github.com/kbroker/kbroker/metadata"
)

// batchingISR is an ISRBatcher over the fake controller: each request
// takes delay (so that proposals queue behind it) and applies its changes
// one by one.
type batchingISR struct {
	*fakeImages
	delay time.Duration

	mu       sync.Mutex
	requests []int // changes per request
}

func (b *batchingISR) AlterPartition(ctx context.Context, changes []metadata.PartitionChange) ([]error, error) {
	b.mu.Lock()
	b.requests = append(b.requests, len(changes))
	b.mu.Unlock()
	select {
	case <-time.After(b.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	errs := make([]error, len(changes))
	for i, c := range changes {
		errs[i] = b.ChangePartition(ctx, c)
	}
	return errs, nil
}

func (b *batchingISR) counts() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.requests)
}

// A follower catching up with many partitions at once joins their ISRs
// through a few AlterPartition requests, not one per partition, and one
// request is in flight at a time.
func TestISRExpandsBatched(t *testing.T) {
	const partitions = 60
	c := newTestCluster(t, 1, 2)
	b := &batchingISR{fakeImages: c.images, delay: 50 * time.Millisecond}
	c.isr = b
	for p := range int32(partitions) {
		c.images.elect(t, "orders", p, []int32{1, 2}, 1, 1)
	}
	c.start(1)
	c.start(2)
	testutil.Eventually(t, 20*time.Second, func() bool {
		for p := range int32(partitions) {
			if !slices.Equal(c.images.partition("orders", p).ISR, []int32{1, 2}) {
				return false
			}
		}
		return true
	}, "every ISR expanded")
	reqs := b.counts()
	total := 0
	for _, n := range reqs {
		total += n
	}
	t.Logf("requests: %v", reqs)
	if len(reqs) >= partitions/3 || total < partitions {
		t.Fatalf("%d requests carrying %v changes for %d partitions: not batched", len(reqs), reqs, partitions)
	}
}

// A partition that proposed again while its first change waited in the
// queue is sent once, with its latest change; the older one ends as not
// proposed.
func TestLatestChangesKeepsNewest(t *testing.T) {
	var ended []int32
	q := func(p, epoch int32) queuedChange {
		return queuedChange{
			c: metadata.PartitionChange{Topic: "t", Partition: p, PartitionEpoch: epoch},
			done: func(err error) {
				if !errors.Is(err, errNotProposed) {
					t.Errorf("t-%d at %d ended with %v", p, epoch, err)
				}
				ended = append(ended, epoch)
			},
		}
	}
	got := latestChanges([]queuedChange{q(0, 1), q(1, 1), q(0, 2), q(2, 1), q(0, 3)})
	var kept []int32
	for _, qc := range got {
		kept = append(kept, qc.c.Partition*10+qc.c.PartitionEpoch)
	}
	if !slices.Equal(kept, []int32{11, 21, 3}) || !slices.Equal(ended, []int32{1, 2}) {
		t.Fatalf("kept %v (partition*10+epoch), ended epochs %v", kept, ended)
	}
}

// Without Run, a queued change fails at once as not proposed (the
// partition may propose again), and the queue is left idle.
func TestQueuedChangeWithoutRun(t *testing.T) {
	c := newTestCluster(t, 1)
	m := NewManager(ManagerConfig{NodeID: 1, ISR: &batchingISR{fakeImages: c.images}})
	errc := make(chan error, 1)
	m.queueISRChange(m.cfg.ISR.(ISRBatcher), metadata.PartitionChange{Topic: "t"}, func(err error) { errc <- err })
	if err := <-errc; !errors.Is(err, errNotProposed) {
		t.Fatalf("got %v", err)
	}
	if m.isrQueue.sending || len(m.isrQueue.pending) != 0 {
		t.Fatal("the queue was left sending")
	}
}
