package replication

import (
	"math"
	"time"
)

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

// LaggingReplicas returns the ISR members, the leader excepted, that have
// not caught up with the leader's log end offset within maxLag of now
// (Kafka's replica.lag.time.max.ms rule): the followers an ISR shrink
// removes. A member with no known catch-up time counts from the zero
// time, so it lags. The result keeps the ISR's order.
func LaggingReplicas(leader int32, isr []int32, lastCaughtUp map[int32]time.Time, now time.Time, maxLag time.Duration) []int32 {
	var out []int32
	for _, id := range isr {
		if id == leader {
			continue
		}
		if now.Sub(lastCaughtUp[id]) > maxLag {
			out = append(out, id)
		}
	}
	return out
}

// CanJoinISR reports whether a follower outside the ISR that fetched at
// fetchOffset may be added to it: it must have reached the high watermark
// and the first offset of the leader's current epoch (so that it holds
// every record the leader wrote before it took over).
func CanJoinISR(fetchOffset, highWatermark, epochStartOffset int64) bool {
	return fetchOffset >= highWatermark && fetchOffset >= epochStartOffset
}

// CaughtUpTime is Kafka's follower catch-up rule: a fetch at or past the
// leader's log end offset catches the follower up now; otherwise, a fetch
// at or past the leader's log end offset of the previous fetch shows the
// follower was caught up when that previous fetch happened. Else the old
// time stands.
func CaughtUpTime(lastCaughtUp time.Time, fetchOffset, leaderLEO int64, now time.Time, prevFetch time.Time, prevFetchLeaderLEO int64) time.Time {
	switch {
	case fetchOffset >= leaderLEO:
		return now
	case prevFetchLeaderLEO >= 0 && fetchOffset >= prevFetchLeaderLEO && prevFetch.After(lastCaughtUp):
		return prevFetch
	}
	return lastCaughtUp
}
