package storage

import "sort"

// ActiveProducer is one producer id's state in a log, as DescribeProducers
// (key 61) reports it.
type ActiveProducer struct {
	ProducerID    int64
	ProducerEpoch int16
	// LastSequence is the last sequence of the producer's newest batch,
	// -1 when no batch of its current epoch is known (a new epoch or a
	// state loaded from a marker).
	LastSequence int32
	// LastTimestamp is the max timestamp of that batch, -1 likewise.
	LastTimestamp int64
	// CoordinatorEpoch is the coordinator epoch of the producer's last
	// transaction marker, -1 before any.
	CoordinatorEpoch int32
	// CurrentTxnStartOffset is the first offset of the producer's ongoing
	// transaction, -1 when none.
	CurrentTxnStartOffset int64
}

// ActiveProducers returns the state of every producer id the log tracks,
// sorted by producer id. It reads under the log's lock, so the answer is
// one consistent view between appends.
func (l *Log) ActiveProducers() []ActiveProducer {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make([]ActiveProducer, 0, len(l.mu.producers))
	for pid, e := range l.mu.producers {
		ap := ActiveProducer{
			ProducerID:            pid,
			ProducerEpoch:         e.Epoch,
			LastSequence:          -1,
			LastTimestamp:         -1,
			CoordinatorEpoch:      e.CoordinatorEpoch,
			CurrentTxnStartOffset: e.CurrentTxnFirstOffset,
		}
		if len(e.Batches) > 0 {
			last := e.Last()
			ap.LastSequence, ap.LastTimestamp = last.LastSeq, last.MaxTimestamp
		}
		out = append(out, ap)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ProducerID < out[j].ProducerID })
	return out
}
