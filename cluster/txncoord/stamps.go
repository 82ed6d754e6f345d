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
// monotonic clock: as old as the node's wall clock (wall, read at mono)
// says they are. A stamp ahead of it (written by a node whose clock ran
// ahead) counts as now: otherwise an open transaction would outlive its
// timeout by the writer's lead, holding back the last stable offset.
func unstamp(m *txn.Metadata, mono, wall time.Time) {
	at := func(t time.Time) time.Time {
		if t.IsZero() {
			return t
		}
		return mono.Add(min(t.Sub(wall), 0))
	}
	m.Start, m.LastUpdate = at(m.Start), at(m.LastUpdate)
}
