package storage

import "math/rand/v2"

// rollAgeMsLocked is the age in milliseconds past which the active
// segment s rolls: segment.ms (for a compacted log at most
// max.compaction.lag.ms) less the segment's jitter. As Kafka's
// rollJitterMs, the jitter is drawn once per segment, uniformly in
// [0, min(segment.jitter.ms, segment.ms)), so that partitions created
// together do not all roll (and fsync, and become cleanable) at once.
// The caller holds l.mu.
func (l *Log) rollAgeMsLocked(s *segment) int64 {
	cfg := l.config()
	ms := cfg.maxSegmentMs()
	if ms <= 0 {
		return ms
	}
	if j := cfg.SegmentJitter.Milliseconds(); j > 0 && !s.jitterDrawn {
		s.rollJitterMs, s.jitterDrawn = rand.Int64N(min(j, ms)), true
	}
	return ms - s.rollJitterMs
}
