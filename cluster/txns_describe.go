package cluster

// The coordinator's answers to DescribeTransactions and ListTransactions.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/cluster/txn"
)

// describe returns a copy of id's state: TRANSACTIONAL_ID_NOT_FOUND when
// this coordinator has none, NOT_COORDINATOR or
// COORDINATOR_LOAD_IN_PROGRESS as for the other requests.
func (c *txnCoordinator) describe(id string) (*txn.Metadata, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, _, err := c.entryLocked(id)
	switch {
	case err != nil:
		return nil, err
	case e == nil || e.meta == nil || e.meta.State == txn.Dead:
		return nil, kerr.TransactionalIDNotFound
	}
	return e.meta.Clone(), nil
}

// txnListFilter selects transactions for ListTransactions; empty sets
// select everything, minDuration < 0 too.
type txnListFilter struct {
	states      map[txn.State]bool
	producerIDs map[int64]bool
	minDuration time.Duration
}

// list returns copies of the loaded transactions the filter selects, and
// COORDINATOR_LOAD_IN_PROGRESS while a partition loads, as Kafka.
func (c *txnCoordinator) list(f txnListFilter, now time.Time) ([]*txn.Metadata, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed {
		return nil, kerr.NotCoordinator
	}
	for _, st := range c.mu.parts {
		if st.loading {
			return nil, kerr.CoordinatorLoadInProgress
		}
	}
	var out []*txn.Metadata
	for _, e := range c.mu.txns {
		m := e.meta
		switch {
		case m == nil:
		case len(f.states) > 0 && !f.states[m.State]:
		case len(f.producerIDs) > 0 && !f.producerIDs[m.ProducerID]:
		case f.minDuration >= 0 && (m.Start.IsZero() || now.Sub(m.Start) < f.minDuration):
		default:
			out = append(out, m.Clone())
		}
	}
	return out, nil
}
