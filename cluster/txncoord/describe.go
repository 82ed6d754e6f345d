package txncoord

// The coordinator's answers to DescribeTransactions and ListTransactions.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/cluster/txn"
)

// Describe returns a copy of id's state: TRANSACTIONAL_ID_NOT_FOUND when
// this coordinator has none, NOT_COORDINATOR or
// COORDINATOR_LOAD_IN_PROGRESS as for the other requests.
func (c *Coordinator) Describe(id string) (*txn.Metadata, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, _, err := c.entryLocked(id)
	switch {
	case err != nil:
		return nil, err
	case e == nil || e.meta == nil || e.meta.State == txn.Dead:
		return nil, kerr.TransactionalIDNotFound
	}
	return stamped(e.meta), nil
}

// ListFilter selects transactions for ListTransactions; empty sets
// select everything, MinDuration < 0 too.
type ListFilter struct {
	States      map[txn.State]bool
	ProducerIDs map[int64]bool
	MinDuration time.Duration
}

// List returns copies of the loaded transactions the filter selects, and
// COORDINATOR_LOAD_IN_PROGRESS while a partition loads, as Kafka.
func (c *Coordinator) List(f ListFilter, now time.Time) ([]*txn.Metadata, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed {
		return nil, kerr.NotCoordinator
	}
	for _, st := range c.mu.Parts {
		if st.Loading {
			return nil, kerr.CoordinatorLoadInProgress
		}
	}
	var out []*txn.Metadata
	for _, e := range c.mu.txns {
		m := e.meta
		switch {
		case m == nil:
		case len(f.States) > 0 && !f.States[m.State]:
		case len(f.ProducerIDs) > 0 && !f.ProducerIDs[m.ProducerID]:
		case f.MinDuration >= 0 && (m.Start.IsZero() || now.Sub(m.Start) < f.MinDuration):
		default:
			out = append(out, stamped(m))
		}
	}
	return out, nil
}
