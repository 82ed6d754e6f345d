package replication

import (
	"github.com/kbroker/kbroker/storage"
)

// The follower side of a partition. The fetcher calls these methods with
// the leader and leader epoch it fetches under; each holds the partition
// lock shared and does nothing (ok = false) when the role has moved on, so
// a role change (update, exclusive) never interleaves with a follower
// write, and a fetcher that lags behind the image cannot write into a log
// this broker now leads.

// followerAppend appends batches fetched from leader byte for byte.
func (p *Partition) followerAppend(leader, epoch int32, batches []byte) (ok bool, err error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if !p.isFollowerOfRLocked(leader, epoch) {
		return false, nil
	}
	_, err = p.log.AppendAsFollower(batches)
	return true, err
}

// followerTruncate truncates the log to offset; the high watermark
// follows it down if it was above (the one time it moves back: the
// records above were never committed under this leader).
func (p *Partition) followerTruncate(leader, epoch int32, offset int64) (ok bool, err error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if !p.isFollowerOfRLocked(leader, epoch) {
		return false, nil
	}
	if err := p.log.TruncateTo(offset); err != nil {
		return true, err
	}
	p.clampHighWatermark()
	return true, nil
}

// followerRestartAt empties the log and restarts it at offset (the
// follower is behind the leader's log start offset).
func (p *Partition) followerRestartAt(leader, epoch int32, offset int64) (ok bool, err error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if !p.isFollowerOfRLocked(leader, epoch) {
		return false, nil
	}
	if err := p.log.TruncateFullyAndStartAt(offset); err != nil {
		return true, err
	}
	p.highWatermark.Store(offset)
	p.log.SetHighWatermarkCheckpoint(offset)
	return true, nil
}

func (p *Partition) clampHighWatermark() {
	leo := p.log.LogEndOffset()
	for {
		hw := p.highWatermark.Load()
		if hw <= leo || p.highWatermark.CompareAndSwap(hw, leo) {
			return
		}
	}
}

// followerHighWatermark raises the follower's high watermark to
// min(leaderHW, log end offset), never lowering it, and checkpoints it.
func (p *Partition) followerHighWatermark(leader, epoch int32, leaderHW int64) (moved bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if !p.isFollowerOfRLocked(leader, epoch) {
		return false
	}
	target := min(leaderHW, p.log.LogEndOffset())
	for {
		cur := p.highWatermark.Load()
		if target <= cur {
			return false
		}
		if p.highWatermark.CompareAndSwap(cur, target) {
			p.log.SetHighWatermarkCheckpoint(target)
			return true
		}
	}
}

// followerPosition is what a fetch needs of the local log: its end and
// start offsets and latest epoch (storage.UndefinedEpoch if none).
func (p *Partition) followerPosition() (leo, logStart int64, latestEpoch int32) {
	latestEpoch, _ = p.log.LatestEpoch()
	return p.log.LogEndOffset(), p.log.LogStartOffset(), latestEpoch
}

// truncationFor applies TruncationOffset to the leader's answer for an
// epoch against the local log.
func (p *Partition) truncationFor(leaderEpoch int32, leaderEndOffset int64) (int64, bool) {
	var fEnd int64 = storage.UndefinedEpochOffset
	fEpoch := storage.UndefinedEpoch
	if leaderEpoch >= 0 {
		fEnd, fEpoch = p.log.EndOffsetForEpoch(leaderEpoch)
	}
	return TruncationOffset(leaderEpoch, leaderEndOffset, fEpoch, fEnd, p.log.LogEndOffset(), p.HighWatermark())
}

func (p *Partition) isFollowerOfRLocked(leader, epoch int32) bool {
	return p.mu.leader == leader && p.mu.leaderEpoch == epoch && leader != p.nodeID
}

// followerLogStart raises the log start offset to the leader's, bounded
// by the high watermark (Kafka's maybeIncrementLogStartOffset on a
// follower): records the leader deleted (DeleteRecords, retention) go
// here too.
func (p *Partition) followerLogStart(leader, epoch int32, leaderLogStart int64) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if !p.isFollowerOfRLocked(leader, epoch) {
		return nil
	}
	target := min(leaderLogStart, p.HighWatermark())
	if target <= p.log.LogStartOffset() {
		return nil
	}
	_, err := p.log.DeleteRecordsBefore(target)
	return err
}
