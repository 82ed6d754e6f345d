package replication

import "math"

// EffectiveMinISR is min.insync.replicas capped at the replica count, so a
// topic with fewer replicas than the broker default still accepts acks=all.
func EffectiveMinISR(minInsyncReplicas int32, replicas int) int {
	if int(minInsyncReplicas) > replicas {
		return replicas
	}
	if minInsyncReplicas < 1 {
		return 1
	}
	return int(minInsyncReplicas)
}

// ValidRequiredAcks reports whether acks is one Kafka accepts.
func ValidRequiredAcks(acks int16) bool { return acks == -1 || acks == 0 || acks == 1 }

// HighWatermark is the offset the leader may expose as committed: the
// minimum log end offset over the ISR (the leader's own included). While
// the ISR is smaller than the effective min.insync.replicas it is not
// allowed to move at all (KIP-966's strict rule), which the caller gets by
// the result being math.MinInt64 — never above the current watermark.
func HighWatermark(leaderLEO int64, leader int32, isr []int32, followerLEO map[int32]int64, effectiveMinISR int) int64 {
	if len(isr) < effectiveMinISR {
		return math.MinInt64
	}
	hw := leaderLEO
	for _, id := range isr {
		if id == leader {
			continue
		}
		leo, ok := followerLEO[id]
		if !ok {
			return math.MinInt64
		}
		hw = min(hw, leo)
	}
	return hw
}
