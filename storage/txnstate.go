package storage

import (
	"fmt"

	"github.com/kbroker/kbroker/storage/producerstate"
	"github.com/kbroker/kbroker/wire/record"
)

// applyBatchLocked updates the producer state with an appended batch
// (leader, follower or replay alike) and follows its transaction: a
// transactional batch may begin one, a marker ends one, and an ABORT adds
// an entry to the .txnindex of the marker's segment unless it is there
// already (a replay after recovery re-derives entries a crash lost).
func (l *Log) applyBatchLocked(b record.Batch) error {
	ev := l.mu.producers.Update(b)
	if ev.Began || ev.Completed {
		// SetHighWatermarkCheckpoint leaves this to us when mu is busy.
		l.mu.txns.OnHighWatermark(l.published.highWatermark.Load())
	}
	switch {
	case ev.Began:
		l.mu.txns.Begin(ev.PID, ev.FirstOffset)
	case ev.Completed:
		var err error
		if ev.Aborted {
			err = l.indexAbortLocked(ev)
		}
		l.mu.txns.Complete(ev.PID, ev.FirstOffset, ev.LastOffset)
		return err
	}
	return nil
}

func (l *Log) indexAbortLocked(ev producerstate.TxnEvent) error {
	s := l.mu.segments[l.segmentForLocked(ev.LastOffset)]
	if s.hasAborted(ev.PID, ev.LastOffset) {
		return nil
	}
	a := abortedTxn{producerID: ev.PID, firstOffset: ev.FirstOffset, lastOffset: ev.LastOffset,
		lastStableOffset: l.mu.txns.LastStableOffsetAt(ev.PID, ev.LastOffset)}
	// Entries are kept in marker order: anything at or past this marker
	// is stale and is re-added as the replay reaches it.
	err := s.truncateAborted(ev.LastOffset)
	if err == nil {
		err = s.appendAborted(l.fs, l.Dir(), a)
	}
	if err != nil {
		// The marker is in the log but not in the index: stop writing;
		// recovery at the next open rebuilds the index from the log.
		l.mu.failed = fmt.Errorf("%w: transaction index of segment %d: %v", ErrStorage, s.base, err)
		l.logger.Error("log failed: cannot write the transaction index", "dir", l.Dir(), "err", err)
		return l.mu.failed
	}
	return nil
}

// AppendControl writes a transaction marker for producerID (the
// WriteTxnMarkers path on the leader): a control batch with the
// transactional and control bits, the producer id and epoch, no
// sequence, one record (key: version 0, type ABORT 0 or COMMIT 1; value:
// version 0, coordinatorEpoch), timestamped now (LogAppendTime when the
// topic says so), at the log end offset, with leaderEpoch.
//
// As Kafka's appendEndTxnMarker: a producer epoch older than the
// producer's current one is ErrInvalidProducerEpoch, a newer one becomes
// current (its sequences restart); a coordinator epoch older than that
// of the producer's last marker is ErrTransactionCoordinatorFenced. The
// marker ends the producer's ongoing transaction if there is one (an
// ABORT adds a .txnindex entry); a marker without one is written anyway
// (the coordinator retries markers) and changes only the epochs.
func (l *Log) AppendControl(producerID int64, producerEpoch int16, coordinatorEpoch int32, commit bool, leaderEpoch int32) (AppendResult, error) {
	if producerID < 0 || producerEpoch < 0 {
		return AppendResult{}, fmt.Errorf("append marker to %s: %w: producer id %d epoch %d", l.Dir(), ErrInvalidRecord, producerID, producerEpoch)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return AppendResult{}, fmt.Errorf("append marker to %s: %w", l.Dir(), err)
	}
	if err := l.mu.producers.CheckMarker(producerID, producerEpoch, coordinatorEpoch); err != nil {
		return AppendResult{}, fmt.Errorf("append marker to %s: %w", l.Dir(), err)
	}
	typ := record.ControlAbort
	if commit {
		typ = record.ControlCommit
	}
	now := l.wall().UnixMilli()
	logAppendTime := l.config().MessageTimestampType == TimestampLogAppendTime
	b, err := record.BuildEndTxnMarker(record.MarkerSpec{
		BaseOffset:           l.mu.logEndOffset,
		PartitionLeaderEpoch: leaderEpoch,
		Timestamp:            now,
		LogAppendTime:        logAppendTime,
		ProducerID:           producerID,
		ProducerEpoch:        producerEpoch,
	}, record.EndTxnMarker{Type: typ, CoordinatorEpoch: coordinatorEpoch})
	if err != nil {
		return AppendResult{}, fmt.Errorf("append marker to %s: %w", l.Dir(), err)
	}
	if err := l.appendLocked(b); err != nil {
		return AppendResult{}, fmt.Errorf("append marker to %s: %w", l.Dir(), err)
	}
	res := AppendResult{FirstOffset: b.BaseOffset(), LastOffset: b.LastOffset(), LogAppendTimeMs: -1,
		LogStartOffset: l.mu.logStartOffset}
	if logAppendTime {
		res.LogAppendTimeMs = now
	}
	if err := l.applyBatchLocked(b); err != nil {
		return AppendResult{}, fmt.Errorf("append marker to %s: %w", l.Dir(), err)
	}
	l.noteBatchEpochLocked(b)
	if err := l.maybeFlushLocked(1); err != nil {
		return AppendResult{}, fmt.Errorf("append marker to %s: %w", l.Dir(), err)
	}
	return res, nil
}

// FirstUnstableOffset returns the first offset of the earliest
// transaction that is ongoing or whose marker is not yet below the high
// watermark last set with SetHighWatermarkCheckpoint (never below the
// log start offset); ok is false when there is none.
func (l *Log) FirstUnstableOffset() (offset int64, ok bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.firstUnstableLocked(l.published.highWatermark.Load())
}

func (l *Log) firstUnstableLocked(hw int64) (int64, bool) {
	first, ok := l.mu.txns.FirstUnstable(hw)
	if !ok {
		return 0, false
	}
	return max(first, l.mu.logStartOffset), true
}

// LastStableOffset returns the last stable offset for a high watermark:
// min(first unstable offset, highWatermark), the end of what
// read_committed consumers may read (Fetch with isolation level 1,
// ListOffsets LATEST). Transactions completed with a marker at or above
// highWatermark still count as unstable.
func (l *Log) LastStableOffset(highWatermark int64) int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if first, ok := l.firstUnstableLocked(highWatermark); ok && first < highWatermark {
		return first
	}
	return highWatermark
}

// AbortedTxn is an aborted transaction overlapping a read, for the
// AbortedTransactions of a read_committed fetch response.
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64 // the offset of its ABORT marker
}

// AbortedTransactions returns the aborted transactions whose offsets
// overlap [fetchOffset, upperBoundOffset), the upper bound being the
// offset after the last batch returned by the read (Kafka's
// collectAbortedTxns): every such transaction's marker is at or after
// fetchOffset, so the search starts at fetchOffset's segment and stops at
// the first entry whose recorded last stable offset reaches the upper
// bound. In marker order; nil when none.
func (l *Log) AbortedTransactions(fetchOffset, upperBoundOffset int64) ([]AbortedTxn, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.mu.closed {
		return nil, fmt.Errorf("aborted transactions %s: %w", l.Dir(), l.closedErrLocked())
	}
	var out []AbortedTxn
	for i := l.segmentForLocked(fetchOffset); i < len(l.mu.segments); i++ {
		var done bool
		out, done = l.mu.segments[i].collectAborted(out, fetchOffset, upperBoundOffset)
		if done {
			break
		}
	}
	return out, nil
}

// ProducerTxnState returns the first offset of producerID's ongoing
// transaction (-1 when none) and the coordinator epoch of its last
// marker (-1 before any).
func (l *Log) ProducerTxnState(producerID int64) (currentTxnFirstOffset int64, coordinatorEpoch int32, ok bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	e, ok := l.mu.producers[producerID]
	if !ok {
		return -1, -1, false
	}
	return e.CurrentTxnFirstOffset, e.CoordinatorEpoch, true
}
