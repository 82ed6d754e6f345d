package replication

import "github.com/kbroker/kbroker/config"

// Durable mode: a topic with flush.messages=1 (Kafka's "fsync every
// message") is durable here in a stronger sense, and made fast by group
// commit:
//
//   - the leader fsyncs a batch before answering its produce (Log.SyncTo,
//     outside the partition and log locks, one fsync covering every
//     batch appended since the previous one), and counts only its fsynced
//     offset (the recovery point), not its log end offset, toward the
//     high watermark;
//   - a follower fsyncs what a fetch response brought before it fetches
//     again, so the fetch offset it reports, which is what moves the
//     leader's high watermark, is on its disk.
//
// So acks=all completes only once the batch is fsynced on every ISR
// member, and a committed record survives the simultaneous power loss of
// the whole ISR. Other topics keep Kafka's default: the page cache and
// replication, with fsync left to flush.messages/flush.ms and segment
// rolls.

// Durable reports whether topic config c asks for durable mode.
func Durable(c config.TopicConfig) bool { return c.FlushMessages == 1 }

// durable reports whether the partition is in durable mode.
func (p *Partition) durable() bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return Durable(p.mu.cfg)
}

// durableEndOffsetRLocked is the leader's own offset counted toward the
// high watermark: its log end offset, or in durable mode its fsynced
// offset. The caller holds p.mu (shared).
func (p *Partition) durableEndOffsetRLocked() int64 {
	if Durable(p.mu.cfg) {
		return min(p.log.RecoveryPoint(), p.log.LogEndOffset())
	}
	return p.log.LogEndOffset()
}
