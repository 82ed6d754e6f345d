package replication

import (
	"fmt"
	"path/filepath"

	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/storage"
)

// Corrupt batches (issue 26). Storage never serves a stored batch whose
// CRC fails: the read (for a consumer, a follower or the scrubber) fails
// with a storage.CorruptBatchError, which storage reports to its
// Corruptions; Run takes the reports here and repairs the replica:
//
//   - A follower truncates its log to the corrupt batch's first offset at
//     once and fetches the tail again from the leader (the in-flight fetch,
//     now at a wrong position, is refused by AppendAsFollower and the
//     fetcher asks the leader where to resume). Until it has caught up, the
//     follower may be in the ISR without the records it dropped, as any
//     follower truncated by KIP-101 may; the leader's high watermark never
//     moves back.
//   - A leader stops leading: the partition leaves the hosted set and is
//     listed offline with KAFKA_STORAGE_ERROR, so clients retry
//     elsewhere; the node reports it to the controller, which elects
//     another ISR member and drops this broker from the ISR (metadata
//     offline_replicas.go). Its log stays open and untouched until an
//     image names another broker leader: then Apply truncates it to the
//     corrupt batch and it follows, catches up and rejoins the ISR. While
//     no other broker leads (it was the only in-sync replica) it stays
//     offline: truncating would discard acknowledged records after the
//     corrupt batch that no other replica holds, and serving them would
//     serve the corrupt batch's gap. The operator decides (an unclean
//     election elsewhere, or repairing the segment).
//
// Why the partition and not the log directory, which Kafka takes offline
// for an I/O error: a CRC mismatch is one bad batch, not a failed disk.
// The directory's other partitions still verify every batch they serve,
// and moving every leadership on the disk for one flipped bit would turn
// a local fault into a cluster-wide one. A disk that keeps flipping bits
// gets each damaged partition offline in turn, and its I/O errors take
// the directory offline as before (storage logdir_failure.go).

// handleCorruption repairs the replicas whose logs reported corrupt
// batches.
func (m *Manager) handleCorruption() {
	type repair struct {
		p              *Partition
		leader, epoch  int32
		offset         int64
		segment, cause string
	}
	var repairs []repair
	var stopped []TopicPartition
	m.mu.Lock()
	for _, r := range m.cfg.Logs.Corruptions().Take() {
		p := m.partitionInDirLocked(filepath.Dir(r.Segment))
		if p == nil {
			continue // removed or already offline
		}
		p.mu.RLock()
		leader, epoch := p.mu.leader, p.mu.leaderEpoch
		p.mu.RUnlock()
		switch {
		case leader == m.cfg.NodeID:
			p.mu.Lock()
			p.mu.leader = metadata.NoLeader
			p.mu.Unlock()
			delete(m.mu.partitions, p.TP)
			if off, ok := m.mu.corrupt[p.TP]; !ok || r.Offset < off {
				m.mu.corrupt[p.TP] = r.Offset
			}
			m.mu.offline[p.TP] = fmt.Errorf("%w: replica %s offline: %w", storage.ErrStorage, p.TP, r)
			stopped = append(stopped, p.TP)
			m.cfg.Logger.Error("corrupt batch in a leader's log: stopping leading it, so that another in-sync replica leads",
				"topic", p.TP.Topic, "partition", p.TP.Partition, "segment", r.Segment, "position", r.Position, "offset", r.Offset, "reason", r.Reason)
		case leader != metadata.NoLeader:
			repairs = append(repairs, repair{p, leader, epoch, r.Offset, r.Segment, r.Reason})
		default:
			m.cfg.Logger.Warn("corrupt batch in a replica without a leader: nothing to refetch from; it is found again when read",
				"topic", p.TP.Topic, "partition", p.TP.Partition, "segment", r.Segment, "offset", r.Offset)
		}
	}
	if len(stopped) > 0 {
		m.reconcileFetchersLocked()
	}
	m.mu.Unlock()
	for _, tp := range stopped {
		m.hooks.roleChange(tp)
	}
	if len(stopped) > 0 && m.cfg.OnLogDirFailure != nil {
		m.cfg.OnLogDirFailure() // report the offline replicas at once
	}
	// Outside Manager.mu: a truncation is file I/O.
	for _, r := range repairs {
		log := r.p.logger.With("segment", r.segment, "offset", r.offset, "reason", r.cause)
		if ok, err := r.p.followerTruncate(r.leader, r.epoch, r.offset); err != nil {
			log.Error("corrupt batch: truncating the follower's log failed", "err", err)
		} else if ok {
			log.Warn("corrupt batch: truncated the follower's log to refetch it from the leader", "log_end_offset", r.p.LogEndOffset())
		}
	}
}

// partitionInDirLocked returns the hosted partition whose log is in dir,
// or nil.
func (m *Manager) partitionInDirLocked(dir string) *Partition {
	for _, p := range m.mu.partitions {
		if filepath.Clean(p.log.Dir()) == filepath.Clean(dir) {
			return p
		}
	}
	return nil
}

// reopenCorruptLocked decides, in Apply, about a replica that stopped
// leading for a corrupt batch: false keeps it offline (no other broker
// leads it); true lets Apply open it, after truncating its log to the
// corrupt batch with repair.
func (m *Manager) reopenCorruptLocked(tp TopicPartition, leader int32) (offset int64, corrupt, reopen bool) {
	off, ok := m.mu.corrupt[tp]
	if !ok {
		return 0, false, true
	}
	return off, true, leader != metadata.NoLeader && leader != m.cfg.NodeID
}
