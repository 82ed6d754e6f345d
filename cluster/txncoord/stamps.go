package txncoord

import (
	"time"

	"github.com/kbroker/kbroker/cluster/txn"
	"github.com/kbroker/kbroker/internal/wallclock"
)

// A transaction's Start and LastUpdate are time.Now readings in memory:
// the transaction timeout and transactional.id.expiration.ms are
// durations on the monotonic clock, which a step of the node's wall
// clock does not move. What leaves the coordinator (the state log's
// StartTimestamp and LastUpdateTimestamp, DescribeTransactions) is the
// time of day on this node (internal/wallclock); a coordinator loading
// the log turns the stamps back into instants by their age on its own
// wall clock.

// stamped is a copy of m with its times as this node's time of day.
func stamped(m *txn.Metadata) *txn.Metadata {
	out := m.Clone()
	if !out.Start.IsZero() {
		out.Start = wallclock.Stamp(out.Start)
	}
	if !out.LastUpdate.IsZero() {
		out.LastUpdate = wallclock.Stamp(out.LastUpdate)
	}
	return out
}

// unstamp turns m's times, read from the state log, into instants on the
// monotonic clock: as old as the node's wall clock says they are.
func unstamp(m *txn.Metadata, mono, wall time.Time) {
	at := func(t time.Time) time.Time {
		if t.IsZero() {
			return t
		}
		return mono.Add(t.Sub(wall))
	}
	m.Start, m.LastUpdate = at(m.Start), at(m.LastUpdate)
}
