package replication

import (
	"fmt"

	"github.com/kbroker/kbroker/storage"
)

// AppendControlAsLeader writes a transaction marker (WriteTxnMarkers on
// the leader) with the acks=all checks of a client append: this broker
// must lead, and the ISR must hold min.insync.replicas, since a marker
// the leader alone holds could be lost with it. The marker is stamped
// with the current leader epoch, and the hooks run as for any append.
func (p *Partition) AppendControlAsLeader(producerID int64, producerEpoch int16, coordinatorEpoch int32, commit bool) (AppendResult, error) {
	p.mu.RLock()
	res, err := p.appendControlRLocked(producerID, producerEpoch, coordinatorEpoch, commit)
	p.mu.RUnlock()
	if err != nil {
		return AppendResult{}, err
	}
	out := AppendResult{AppendResult: res}
	out.HighWatermarkMoved = p.maybeAdvanceHighWatermark()
	p.hooks.logAppend(p.TP)
	if out.HighWatermarkMoved {
		p.hooks.highWatermark(p.TP)
	}
	return out, nil
}

func (p *Partition) appendControlRLocked(producerID int64, producerEpoch int16, coordinatorEpoch int32, commit bool) (storage.AppendResult, error) {
	if p.mu.leader != p.nodeID {
		return storage.AppendResult{}, ErrNotLeader
	}
	if isr, min := len(p.mu.isr), EffectiveMinISR(p.mu.cfg.MinInsyncReplicas, len(p.mu.replicas)); isr < min {
		return storage.AppendResult{}, fmt.Errorf("%w: isr %d, min.insync.replicas %d", ErrNotEnoughReplicas, isr, min)
	}
	return p.log.AppendControl(producerID, producerEpoch, coordinatorEpoch, commit, p.mu.leaderEpoch)
}

// LastStableOffset is the end of what a read_committed consumer may read:
// the high watermark, or the first offset of the earliest transaction
// still open (or whose marker is not yet replicated) if lower.
func (p *Partition) LastStableOffset() int64 {
	return p.log.LastStableOffset(p.HighWatermark())
}
