package integrity

import (
	"sync"
	"sync/atomic"
)

// seenCap bounds the batches Reports remembers having counted; past it
// the memory is cleared (a batch still read then counts again).
const seenCap = 4096

// Reports collects the corrupt batches the logs of one storage Manager
// find, for the metric (Count) and for the owner of the replicas, which
// takes them (Take) when Signal fires. A batch read many times before it
// is dealt with (every consumer poll, every follower fetch) is counted
// and reported once. The zero value is not usable; a nil *Reports
// ignores Add (a log opened without a Manager).
type Reports struct {
	signal chan struct{}
	count  atomic.Int64

	mu      sync.Mutex
	seen    map[batchKey]bool // counted, across Takes
	pending map[batchKey]*CorruptBatchError
	order   []batchKey // pending in the order found
}

type batchKey struct {
	segment  string
	position int64
}

// NewReports returns an empty Reports.
func NewReports() *Reports {
	return &Reports{signal: make(chan struct{}, 1), seen: map[batchKey]bool{}, pending: map[batchKey]*CorruptBatchError{}}
}

// Add records e and signals. It never blocks: it runs under the log's
// lock.
func (r *Reports) Add(e *CorruptBatchError) {
	if r == nil {
		return
	}
	k := batchKey{e.Segment, e.Position}
	r.mu.Lock()
	if !r.seen[k] {
		if len(r.seen) >= seenCap {
			clear(r.seen)
		}
		r.seen[k] = true
		r.count.Add(1)
	}
	_, dup := r.pending[k]
	if !dup {
		c := *e
		r.pending[k] = &c
		r.order = append(r.order, k)
	}
	r.mu.Unlock()
	if !dup {
		select {
		case r.signal <- struct{}{}:
		default:
		}
	}
}

// Count is how many distinct corrupt batches were found (the metric
// kbroker_log_corrupt_batches_total).
func (r *Reports) Count() int64 { return r.count.Load() }

// Signal is signalled (coalesced) when a report is added.
func (r *Reports) Signal() <-chan struct{} { return r.signal }

// Take returns the reports added since the last Take, in the order found,
// and forgets them: a batch found again later (not repaired, or corrupt
// again) is reported again.
func (r *Reports) Take() []*CorruptBatchError {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*CorruptBatchError, 0, len(r.order))
	for _, k := range r.order {
		out = append(out, r.pending[k])
	}
	clear(r.pending)
	r.order = r.order[:0]
	return out
}
