package storage

import (
	"container/heap"
	"time"
)

// The periodic flush (flush.ms, Kafka's log.flush.interval.ms): Run's
// ticker calls flushDue every flushCheckInterval. Each log with a
// flush.ms has one entry in a min-heap ordered by when it is next due, so
// a tick pops only the logs due and costs nothing per log otherwise: with
// thousands of partitions, locking each log ten times a second to find it
// not due was most of an idle broker's storage work.
//
// An entry is due at the log's last flush plus its flush.ms. When it is
// popped, flushIfDue decides with the log's own state (a flush.messages
// flush, a roll or SyncTo may have flushed since) and the log is pushed
// again at its new due time. A flush.ms change (SetConfig) pushes a new
// entry and makes the old one stale through the log's flushGen; entries
// of logs no longer open here, or whose flush.ms is now 0, are dropped
// when popped.

// flushEntry is one log's place in the flush schedule.
type flushEntry struct {
	due time.Time
	tp  topicPartition
	l   *Log
	gen uint64 // the log's flushGen when pushed
}

// flushHeap is a min-heap of flushEntry by due (container/heap).
type flushHeap []flushEntry

func (h flushHeap) Len() int           { return len(h) }
func (h flushHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h flushHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *flushHeap) Push(x any)        { *h = append(*h, x.(flushEntry)) }
func (h *flushHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = flushEntry{} // let the log go
	*h = old[:len(old)-1]
	return e
}

// scheduleFlushLocked makes tp's log l due at its next flush.ms flush,
// replacing any entry it had. A log without flush.ms gets none.
func (m *Manager) scheduleFlushLocked(tp topicPartition, l *Log) {
	l.flushGen++
	if due, ok := l.nextFlush(); ok {
		heap.Push(&m.mu.flushes, flushEntry{due: due, tp: tp, l: l, gen: l.flushGen})
	}
}

// flushConfigChanged is called by a log of m whose flush.ms changed.
func (m *Manager) flushConfigChanged(tp topicPartition, l *Log) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.mu.closed && m.mu.logs[tp] == l {
		m.scheduleFlushLocked(tp, l)
	}
}

// flushDue flushes the logs whose flush.ms has passed at now, then
// checkpoints the recovery points if one moved.
func (m *Manager) flushDue(now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.closed {
		return
	}
	flushed := false
	var again []flushEntry
	for m.mu.flushes.Len() > 0 && !m.mu.flushes[0].due.After(now) {
		e := heap.Pop(&m.mu.flushes).(flushEntry)
		l := e.l
		if e.gen != l.flushGen || m.mu.logs[e.tp] != l {
			continue // stale: rescheduled, closed or deleted
		}
		before := l.RecoveryPoint()
		if err := l.flushIfDue(now); err != nil {
			m.logger.Error("periodic flush failed", "dir", l.Dir(), "err", err)
		}
		flushed = flushed || l.RecoveryPoint() != before
		if due, ok := l.nextFlush(); ok {
			// Pushed after the loop: a log whose due time is still
			// not after now (a failed fsync, a clock behind now) is
			// tried again on the next tick, not in this one forever.
			again = append(again, flushEntry{due: due, tp: e.tp, l: l, gen: e.gen})
		}
	}
	for _, e := range again {
		heap.Push(&m.mu.flushes, e)
	}
	if flushed {
		if err := m.checkpointLocked(); err != nil {
			m.logger.Error("recovery point checkpoint failed", "err", err)
		}
	}
}
