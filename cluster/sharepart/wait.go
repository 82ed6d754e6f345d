package sharepart

// A ShareFetch that acquired nothing waits, up to its MaxWait, for one
// of its partitions to have records past its share-partition's fetch
// offset: an operation in the fetch purgatory, checked when a partition
// is appended to or its high watermark moves, and when records are
// released (acknowledged as RELEASE, or a lock ended).

import (
	"context"
	"time"

	"github.com/kbroker/kbroker/replication"
)

// delayedShareFetch completes once one of its partitions has records to
// acquire; the fetch then tries again.
type delayedShareFetch struct {
	m     *Manager
	group string
	parts []TP
	done  chan struct{}
}

func (d *delayedShareFetch) TryComplete() bool {
	if !d.m.available(d.group, d.parts) {
		return false
	}
	close(d.done)
	return true
}

func (d *delayedShareFetch) OnExpire() { close(d.done) }

// available reports whether one of parts may have records to acquire: a
// share-partition not loaded yet, or one whose fetch offset is below the
// high watermark.
func (m *Manager) available(group string, parts []TP) bool {
	for _, tp := range parts {
		rep, _, err := m.host.Replica(tp.TopicID, tp.Partition)
		if err != nil || !rep.IsLeader() {
			return true // the fetch answers the error
		}
		m.mu.Lock()
		sp := m.mu.parts[partKey{Group: group, TopicID: tp.TopicID, Partition: tp.Partition}]
		m.mu.Unlock()
		if sp == nil || sp.dropped.Load() || sp.nextFetch.Load() < rep.HighWatermark() {
			return true
		}
	}
	return false
}

// wait blocks until one of parts may have records, req.Wait passes, or
// ctx ends. Kafka serves one request of a connection at a time, so
// holding this connection's next request meanwhile is what a client
// expects.
func (m *Manager) wait(ctx context.Context, req FetchRequest, parts []TP) {
	if len(parts) == 0 {
		return
	}
	keys := make([]replication.TopicPartition, 0, len(parts))
	for _, tp := range parts {
		if _, name, err := m.host.Replica(tp.TopicID, tp.Partition); err == nil {
			keys = append(keys, replication.TopicPartition{Topic: name, Partition: tp.Partition})
		}
	}
	op := &delayedShareFetch{m: m, group: req.Group, parts: parts, done: make(chan struct{})}
	m.waiters.TryCompleteElseWatch(op, time.Now().Add(req.Wait), keys...)
	select {
	case <-op.done:
	case <-ctx.Done():
	}
}
