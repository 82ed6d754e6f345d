package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sort"

	"github.com/kbroker/kbroker/wire/record"
)

// numBatchesToRetain is how many recent batches per producer are kept for
// duplicate detection (Kafka's ProducerStateEntry.NumBatchesToRetain).
const numBatchesToRetain = 5

// batchMeta describes one appended batch of an idempotent producer.
type batchMeta struct {
	firstSeq, lastSeq       int32
	firstOffset, lastOffset int64
	maxTimestamp            int64
}

// producerEntry is the state of one producer id: its epoch, its last few
// batches, oldest first, and its transaction (Kafka's ProducerStateEntry).
type producerEntry struct {
	epoch   int16
	batches []batchMeta
	// coordinatorEpoch is the coordinator epoch of the producer's last
	// transaction marker, -1 before any: a marker from an older
	// coordinator is fenced.
	coordinatorEpoch int32
	// currentTxnFirstOffset is the first offset of the producer's ongoing
	// transaction, -1 when none: set by its first transactional batch,
	// cleared by its marker.
	currentTxnFirstOffset int64
}

func newProducerEntry(epoch int16) *producerEntry {
	return &producerEntry{epoch: epoch, coordinatorEpoch: -1, currentTxnFirstOffset: -1}
}

func (e *producerEntry) last() batchMeta { return e.batches[len(e.batches)-1] }

// producerStateMap follows Kafka's ProducerStateManager: per producer id,
// the epoch, the last batches (idempotence) and the ongoing transaction.
// The Log's txnTracker orders the transactions. Guarded by the Log's mu.
type producerStateMap map[int64]*producerEntry

// check validates b (already offset-less) against the producer's state:
// epoch, sequence, then transaction state. It returns the cached batch if
// b is a retry of one of the last batches.
func (m producerStateMap) check(b record.Batch) (*batchMeta, error) {
	dup, err := m.checkSequence(b)
	if dup != nil || err != nil || b.ProducerID() == record.NoProducerID {
		return dup, err
	}
	return nil, m.checkTxnState(b)
}

// checkSequence is check without the transaction state.
func (m producerStateMap) checkSequence(b record.Batch) (*batchMeta, error) {
	pid := b.ProducerID()
	if pid == record.NoProducerID {
		return nil, nil
	}
	epoch, firstSeq, lastSeq := b.ProducerEpoch(), b.BaseSequence(), b.LastSequence()
	e, ok := m[pid]
	if !ok || epoch > e.epoch {
		if firstSeq != 0 {
			return nil, fmt.Errorf("%w: producer %d epoch %d: first sequence %d, want 0 for a new producer or epoch",
				ErrOutOfOrderSequence, pid, epoch, firstSeq)
		}
		return nil, nil
	}
	if epoch < e.epoch {
		return nil, fmt.Errorf("%w: producer %d: epoch %d is older than the current %d",
			ErrInvalidProducerEpoch, pid, epoch, e.epoch)
	}
	for i := range e.batches {
		if e.batches[i].firstSeq == firstSeq && e.batches[i].lastSeq == lastSeq {
			dup := e.batches[i]
			return &dup, nil
		}
	}
	if len(e.batches) == 0 {
		// Loaded with an epoch but no batches: only 0 is certain.
		if firstSeq != 0 {
			return nil, fmt.Errorf("%w: producer %d epoch %d: sequence %d, no batches known",
				ErrOutOfOrderSequence, pid, epoch, firstSeq)
		}
		return nil, nil
	}
	if want := record.IncrementSequence(e.last().lastSeq, 1); firstSeq != want {
		return nil, fmt.Errorf("%w: producer %d epoch %d: sequence %d, expected %d",
			ErrOutOfOrderSequence, pid, epoch, firstSeq, want)
	}
	return nil, nil
}

// checkTxnState refuses a non-transactional batch from a producer in the
// middle of a transaction (Kafka's INVALID_TXN_STATE).
func (m producerStateMap) checkTxnState(b record.Batch) error {
	if e, ok := m[b.ProducerID()]; ok && e.currentTxnFirstOffset >= 0 && !b.IsTransactional() {
		return fmt.Errorf("%w: producer %d sent a non-transactional batch in its transaction from offset %d",
			ErrInvalidTxnState, b.ProducerID(), e.currentTxnFirstOffset)
	}
	return nil
}

// checkMarker validates a transaction marker about to be written by the
// leader (Kafka's appendEndTxnMarker checks): a producer epoch older than
// the current one is refused, a newer one bumps it; a coordinator epoch
// older than the last marker's means a fenced coordinator.
func (m producerStateMap) checkMarker(pid int64, epoch int16, coordinatorEpoch int32) error {
	e, ok := m[pid]
	if !ok {
		return nil
	}
	if epoch < e.epoch {
		return fmt.Errorf("%w: marker for producer %d has epoch %d, older than the current %d",
			ErrInvalidProducerEpoch, pid, epoch, e.epoch)
	}
	if coordinatorEpoch < e.coordinatorEpoch {
		return fmt.Errorf("%w: marker for producer %d from coordinator epoch %d, the last was %d",
			ErrTransactionCoordinatorFenced, pid, coordinatorEpoch, e.coordinatorEpoch)
	}
	return nil
}

// txnEvent is what an appended batch did to its producer's transaction.
type txnEvent struct {
	began     bool // a transactional batch started a transaction at firstOffset
	completed bool // a marker at lastOffset ended the one from firstOffset
	aborted   bool // ... with ABORT
	pid       int64
	// firstOffset is the transaction's first offset; lastOffset its
	// marker's.
	firstOffset, lastOffset int64
}

// update records an appended batch (offsets assigned) and reports the
// transaction it began or ended. It is used both after a checked append
// and when replaying the log or following the leader, where nothing is
// checked.
func (m producerStateMap) update(b record.Batch) txnEvent {
	pid := b.ProducerID()
	if pid == record.NoProducerID {
		return txnEvent{}
	}
	if b.IsControl() {
		return m.updateMarker(b)
	}
	e, ok := m[pid]
	if !ok {
		e = newProducerEntry(b.ProducerEpoch())
		m[pid] = e
	}
	if b.ProducerEpoch() != e.epoch {
		e.epoch = b.ProducerEpoch()
		e.batches = e.batches[:0]
	}
	var ev txnEvent
	if b.IsTransactional() && e.currentTxnFirstOffset < 0 {
		e.currentTxnFirstOffset = b.BaseOffset()
		ev = txnEvent{began: true, pid: pid, firstOffset: b.BaseOffset()}
	}
	meta := batchMeta{
		firstSeq:     b.BaseSequence(),
		lastSeq:      b.LastSequence(),
		firstOffset:  b.BaseOffset(),
		lastOffset:   b.LastOffset(),
		maxTimestamp: b.MaxTimestamp(),
	}
	if len(e.batches) == numBatchesToRetain {
		copy(e.batches, e.batches[1:])
		e.batches = e.batches[:numBatchesToRetain-1]
	}
	e.batches = append(e.batches, meta)
	return ev
}

// updateMarker applies a control batch. An ABORT or COMMIT marker sets
// the producer's epoch (a newer one resets its sequences) and coordinator
// epoch and ends its ongoing transaction, if any. Other control records
// and undecodable ones change nothing, as in Kafka.
func (m producerStateMap) updateMarker(b record.Batch) txnEvent {
	mk, ok, err := record.ParseControl(b)
	if err != nil || !ok || (mk.Type != record.ControlAbort && mk.Type != record.ControlCommit) {
		return txnEvent{}
	}
	pid := b.ProducerID()
	e, found := m[pid]
	if !found {
		e = newProducerEntry(b.ProducerEpoch())
		m[pid] = e
	}
	if b.ProducerEpoch() != e.epoch {
		e.epoch = b.ProducerEpoch()
		e.batches = e.batches[:0]
	}
	e.coordinatorEpoch = mk.CoordinatorEpoch
	if e.currentTxnFirstOffset < 0 {
		return txnEvent{}
	}
	ev := txnEvent{completed: true, aborted: mk.Type == record.ControlAbort, pid: pid,
		firstOffset: e.currentTxnFirstOffset, lastOffset: b.BaseOffset()}
	e.currentTxnFirstOffset = -1
	return ev
}

// Snapshot file format (all integers big-endian):
//
//	+--------+---------+--------+-----------+------------------------+
//	| "KBPS" | version | crc32c | count u32 | count producer entries |
//	| 4      | u16 = 2 | u32    |           |                        |
//	+--------+---------+--------+-----------+------------------------+
//	entry: producerId i64, epoch i16, coordinatorEpoch i32,
//	       currentTxnFirstOffset i64 (-1: none), n u8, n × batch
//	batch: firstSeq i32, lastSeq i32, firstOffset i64, lastOffset i64,
//	       maxTimestamp i64
//
// The CRC-32C covers everything after the crc field. Version 1 entries
// lack coordinatorEpoch and currentTxnFirstOffset (read as -1).
const (
	snapshotMagic   = "KBPS"
	snapshotVersion = 2
	snapshotHeader  = 4 + 2 + 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func (m producerStateMap) encode() []byte {
	pids := make([]int64, 0, len(m))
	for pid := range m {
		pids = append(pids, pid)
	}
	sort.Slice(pids, func(i, j int) bool { return pids[i] < pids[j] })
	buf := make([]byte, snapshotHeader, snapshotHeader+4+len(m)*(23+numBatchesToRetain*32))
	copy(buf, snapshotMagic)
	binary.BigEndian.PutUint16(buf[4:], snapshotVersion)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(pids)))
	for _, pid := range pids {
		e := m[pid]
		buf = binary.BigEndian.AppendUint64(buf, uint64(pid))
		buf = binary.BigEndian.AppendUint16(buf, uint16(e.epoch))
		buf = binary.BigEndian.AppendUint32(buf, uint32(e.coordinatorEpoch))
		buf = binary.BigEndian.AppendUint64(buf, uint64(e.currentTxnFirstOffset))
		buf = append(buf, byte(len(e.batches)))
		for _, b := range e.batches {
			buf = binary.BigEndian.AppendUint32(buf, uint32(b.firstSeq))
			buf = binary.BigEndian.AppendUint32(buf, uint32(b.lastSeq))
			buf = binary.BigEndian.AppendUint64(buf, uint64(b.firstOffset))
			buf = binary.BigEndian.AppendUint64(buf, uint64(b.lastOffset))
			buf = binary.BigEndian.AppendUint64(buf, uint64(b.maxTimestamp))
		}
	}
	binary.BigEndian.PutUint32(buf[6:], crc32.Checksum(buf[snapshotHeader:], castagnoli))
	return buf
}

var errBadSnapshot = errors.New("bad producer snapshot")

func decodeProducerSnapshot(buf []byte) (producerStateMap, error) {
	if len(buf) < snapshotHeader+4 || string(buf[:4]) != snapshotMagic {
		return nil, fmt.Errorf("%w: bad header", errBadSnapshot)
	}
	v := binary.BigEndian.Uint16(buf[4:])
	if v != 1 && v != snapshotVersion {
		return nil, fmt.Errorf("%w: version %d", errBadSnapshot, v)
	}
	if crc32.Checksum(buf[snapshotHeader:], castagnoli) != binary.BigEndian.Uint32(buf[6:]) {
		return nil, fmt.Errorf("%w: crc mismatch", errBadSnapshot)
	}
	p := buf[snapshotHeader:]
	n := binary.BigEndian.Uint32(p)
	p = p[4:]
	m := make(producerStateMap)
	for range n {
		if len(p) < 11 {
			return nil, fmt.Errorf("%w: short entry", errBadSnapshot)
		}
		pid := int64(binary.BigEndian.Uint64(p))
		e := newProducerEntry(int16(binary.BigEndian.Uint16(p[8:])))
		p = p[10:]
		if v >= 2 {
			if len(p) < 13 {
				return nil, fmt.Errorf("%w: short entry", errBadSnapshot)
			}
			e.coordinatorEpoch = int32(binary.BigEndian.Uint32(p))
			e.currentTxnFirstOffset = int64(binary.BigEndian.Uint64(p[4:]))
			p = p[12:]
		}
		nb := int(p[0])
		p = p[1:]
		if nb > numBatchesToRetain || len(p) < nb*32 {
			return nil, fmt.Errorf("%w: short batches", errBadSnapshot)
		}
		for range nb {
			e.batches = append(e.batches, batchMeta{
				firstSeq:     int32(binary.BigEndian.Uint32(p)),
				lastSeq:      int32(binary.BigEndian.Uint32(p[4:])),
				firstOffset:  int64(binary.BigEndian.Uint64(p[8:])),
				lastOffset:   int64(binary.BigEndian.Uint64(p[16:])),
				maxTimestamp: int64(binary.BigEndian.Uint64(p[24:])),
			})
			p = p[32:]
		}
		m[pid] = e
	}
	if len(p) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", errBadSnapshot, len(p))
	}
	return m, nil
}
