package replication

import (
	"context"
	"errors"
	"sync"

	"github.com/kbroker/kbroker/metadata"
)

// ISRBatcher is an ISRChanger that also sends the changes of many
// partitions in one request (Kafka's AlterPartition). The manager then
// queues its ISR proposals and sends whatever is pending in one request,
// one request at a time, as Kafka's AlterPartitionManager does: a broker
// whose followers all come back at once (a restart of the cluster) sends
// a few requests for 10,000 partitions, not 10,000.
type ISRBatcher interface {
	ISRChanger
	// AlterPartition returns one error per change (nil: applied), or err
	// when the request failed as a whole.
	AlterPartition(ctx context.Context, changes []metadata.PartitionChange) ([]error, error)
}

// maxAlterPartitionBatch bounds the changes of one request, and so the
// size of its frame and of its raft entry (about 150 bytes a change).
const maxAlterPartitionBatch = 2000

// errNotProposed: the change was never sent (Run is not running, or it
// ended first, or a newer change of the partition replaced it).
var errNotProposed = errors.New("replication: ISR change not proposed")

// isrQueue is the ISR changes waiting for the next AlterPartition request.
// sending is set while a sender goroutine (owned by Run) drains it.
type isrQueue struct {
	mu      sync.Mutex
	pending []queuedChange
	sending bool
}

type queuedChange struct {
	c    metadata.PartitionChange
	done func(error)
}

// queueISRChange queues c for the next request, starting the sender if
// none runs. done gets the outcome, on the sender, without locks held.
func (m *Manager) queueISRChange(b ISRBatcher, c metadata.PartitionChange, done func(error)) {
	q := &m.isrQueue
	q.mu.Lock()
	q.pending = append(q.pending, queuedChange{c, done})
	start := !q.sending
	q.sending = true
	q.mu.Unlock()
	if start && !m.spawn(func(ctx context.Context) { m.sendISRChanges(ctx, b) }) {
		m.failQueued(errNotProposed)
	}
}

// failQueued ends the queue: every change pending gets err.
func (m *Manager) failQueued(err error) {
	q := &m.isrQueue
	q.mu.Lock()
	batch := q.pending
	q.pending, q.sending = nil, false
	q.mu.Unlock()
	for _, qc := range batch {
		qc.done(err)
	}
}

// sendISRChanges sends the queued changes, up to maxAlterPartitionBatch a
// request, until the queue is empty or ctx ends.
func (m *Manager) sendISRChanges(ctx context.Context, b ISRBatcher) {
	q := &m.isrQueue
	for {
		if ctx.Err() != nil {
			m.failQueued(errNotProposed)
			return
		}
		q.mu.Lock()
		if len(q.pending) == 0 {
			q.pending, q.sending = nil, false
			q.mu.Unlock()
			return
		}
		n := min(len(q.pending), maxAlterPartitionBatch)
		batch := q.pending[:n:n]
		q.pending = q.pending[n:]
		q.mu.Unlock()
		batch = latestChanges(batch)
		changes := make([]metadata.PartitionChange, len(batch))
		for i, qc := range batch {
			changes[i] = qc.c
		}
		rctx, cancel := context.WithTimeout(ctx, isrProposalTimeout)
		errs, err := b.AlterPartition(rctx, changes)
		cancel()
		if err != nil && !errors.Is(err, context.Canceled) {
			m.cfg.Logger.Info("ISR changes not applied", "partitions", len(changes), "err", err)
		}
		for i, qc := range batch {
			e := err
			if e == nil {
				e = errs[i]
				m.logISRChange(qc.c, e)
			}
			qc.done(e)
		}
	}
}

// latestChanges keeps the last change of each partition in batch (a
// partition whose epoch moved while its change waited may have proposed
// again) and ends the others with errNotProposed: the controller would
// refuse a partition named twice.
func latestChanges(batch []queuedChange) []queuedChange {
	type key struct {
		topic     string
		partition int32
	}
	last := make(map[key]int, len(batch))
	for i, qc := range batch {
		last[key{qc.c.Topic, qc.c.Partition}] = i
	}
	if len(last) == len(batch) {
		return batch
	}
	out := batch[:0:0]
	for i, qc := range batch {
		if last[key{qc.c.Topic, qc.c.Partition}] == i {
			out = append(out, qc)
		} else {
			qc.done(errNotProposed)
		}
	}
	return out
}
