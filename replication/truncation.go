package replication

import "github.com/kbroker/kbroker/storage"

// TruncationOffset is where a follower truncates its log given the
// leader's answer for the epoch it asked about (an OffsetForLeaderEpoch
// answer, or a fetch response's diverging epoch): leaderEpoch is the
// largest epoch the leader has at or below the one asked, leaderEndOffset
// the end of it there. followerEpoch and followerEndOffset are the
// follower's own answer for leaderEpoch (storage.Log.EndOffsetForEpoch),
// followerLEO and followerHW its log end offset and high watermark.
//
// The rules are Kafka's (KIP-101, KIP-279):
//   - the leader knows nothing of the epoch (UNDEFINED end offset): fall
//     back to the high watermark, the only offset known to be committed;
//   - the follower has the same epoch: truncate to the smaller end offset
//     of the two — done;
//   - the follower has an earlier epoch than the leader's answer (it never
//     saw that epoch): truncate to the end of its own epoch and ask again
//     for it — not done (KIP-279: repeat until both agree on an epoch);
//   - the follower has no epoch at or below it: truncate to the leader's
//     end offset.
//
// The result is never above followerLEO.
func TruncationOffset(leaderEpoch int32, leaderEndOffset int64, followerEpoch int32, followerEndOffset int64, followerLEO, followerHW int64) (offset int64, done bool) {
	switch {
	case leaderEndOffset == storage.UndefinedEpochOffset:
		return min(followerHW, followerLEO), true
	case leaderEpoch == storage.UndefinedEpoch:
		return min(leaderEndOffset, followerLEO), true
	case followerEpoch == storage.UndefinedEpoch || followerEndOffset == storage.UndefinedEpochOffset:
		return min(leaderEndOffset, followerLEO), true
	case followerEpoch != leaderEpoch:
		return min(followerEndOffset, followerLEO), false
	}
	return min(leaderEndOffset, followerEndOffset, followerLEO), true
}
