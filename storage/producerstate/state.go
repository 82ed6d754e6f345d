package producerstate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"sort"

	"github.com/kbroker/kbroker/wire/record"
)

// NumBatchesToRetain is how many recent batches per producer are kept for
// duplicate detection (Kafka's ProducerStateEntry.NumBatchesToRetain).
const NumBatchesToRetain = 5

// BatchMetadata describes one appended batch of an idempotent producer.
type BatchMetadata struct {
	FirstSeq, LastSeq       int32
	FirstOffset, LastOffset int64
	MaxTimestamp            int64
}

// Entry is the state of one producer id: its epoch, its last few
// batches, oldest first, and its transaction (Kafka's ProducerStateEntry).
type Entry struct {
	Epoch   int16
	Batches []BatchMetadata
	// CoordinatorEpoch is the coordinator epoch of the producer's last
	// transaction marker, -1 before any: a marker from an older
	// coordinator is fenced.
	CoordinatorEpoch int32
	// CurrentTxnFirstOffset is the first offset of the producer's ongoing
	// transaction, -1 when none: set by its first transactional batch,
	// cleared by its marker.
	CurrentTxnFirstOffset int64
}

// NewEntry is a producer's state before any batch or marker of it.
func NewEntry(epoch int16) *Entry {
	return &Entry{Epoch: epoch, CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1}
}

// Last is the producer's newest batch; the caller checked it has one.
func (e *Entry) Last() BatchMetadata { return e.Batches[len(e.Batches)-1] }

// State follows Kafka's ProducerStateManager: per producer id, the
// epoch, the last batches (idempotence) and the ongoing transaction. A
// TxnTracker orders the transactions. It is not safe for concurrent use:
// the Log guards it with its mu.
type State map[int64]*Entry

// Check validates b (already offset-less) against the producer's state:
// epoch, sequence, then transaction state. It returns the cached batch if
// b is a retry of one of the last batches.
func (m State) Check(b record.Batch) (*BatchMetadata, error) {
	dup, err := m.CheckSequence(b)
	if dup != nil || err != nil || b.ProducerID() == record.NoProducerID {
		return dup, err
	}
	return nil, m.CheckTxnState(b)
}

// CheckSequence is Check without the transaction state.
func (m State) CheckSequence(b record.Batch) (*BatchMetadata, error) {
	pid := b.ProducerID()
	if pid == record.NoProducerID {
		return nil, nil
	}
	epoch, firstSeq, lastSeq := b.ProducerEpoch(), b.BaseSequence(), b.LastSequence()
	e, ok := m[pid]
	if !ok || epoch > e.Epoch {
		if firstSeq != 0 {
			return nil, fmt.Errorf("%w: producer %d epoch %d: first sequence %d, want 0 for a new producer or epoch",
				ErrOutOfOrderSequence, pid, epoch, firstSeq)
		}
		return nil, nil
	}
	if epoch < e.Epoch {
		return nil, fmt.Errorf("%w: producer %d: epoch %d is older than the current %d",
			ErrInvalidProducerEpoch, pid, epoch, e.Epoch)
	}
	for i := range e.Batches {
		if e.Batches[i].FirstSeq == firstSeq && e.Batches[i].LastSeq == lastSeq {
			dup := e.Batches[i]
			return &dup, nil
		}
	}
	if len(e.Batches) == 0 {
		// Loaded with an epoch but no batches: only 0 is certain.
		if firstSeq != 0 {
			return nil, fmt.Errorf("%w: producer %d epoch %d: sequence %d, no batches known",
				ErrOutOfOrderSequence, pid, epoch, firstSeq)
		}
		return nil, nil
	}
	if want := record.IncrementSequence(e.Last().LastSeq, 1); firstSeq != want {
		return nil, fmt.Errorf("%w: producer %d epoch %d: sequence %d, expected %d",
			ErrOutOfOrderSequence, pid, epoch, firstSeq, want)
	}
	return nil, nil
}

// CheckTxnState refuses a non-transactional batch from a producer in the
// middle of a transaction (Kafka's INVALID_TXN_STATE).
func (m State) CheckTxnState(b record.Batch) error {
	if e, ok := m[b.ProducerID()]; ok && e.CurrentTxnFirstOffset >= 0 && !b.IsTransactional() {
		return fmt.Errorf("%w: producer %d sent a non-transactional batch in its transaction from offset %d",
			ErrInvalidTxnState, b.ProducerID(), e.CurrentTxnFirstOffset)
	}
	return nil
}

// CheckMarker validates a transaction marker about to be written by the
// leader (Kafka's appendEndTxnMarker checks): a producer epoch older than
// the current one is refused, a newer one bumps it; a coordinator epoch
// older than the last marker's means a fenced coordinator.
func (m State) CheckMarker(pid int64, epoch int16, coordinatorEpoch int32) error {
	e, ok := m[pid]
	if !ok {
		return nil
	}
	if epoch < e.Epoch {
		return fmt.Errorf("%w: marker for producer %d has epoch %d, older than the current %d",
			ErrInvalidProducerEpoch, pid, epoch, e.Epoch)
	}
	if coordinatorEpoch < e.CoordinatorEpoch {
		return fmt.Errorf("%w: marker for producer %d from coordinator epoch %d, the last was %d",
			ErrTransactionCoordinatorFenced, pid, coordinatorEpoch, e.CoordinatorEpoch)
	}
	return nil
}

// TxnEvent is what an appended batch did to its producer's transaction.
type TxnEvent struct {
	Began     bool // a transactional batch started a transaction at FirstOffset
	Completed bool // a marker at LastOffset ended the one from FirstOffset
	Aborted   bool // ... with ABORT
	PID       int64
	// FirstOffset is the transaction's first offset; LastOffset its
	// marker's.
	FirstOffset, LastOffset int64
}

// Update records an appended batch (offsets assigned) and reports the
// transaction it began or ended. It is used both after a checked append
// and when replaying the log or following the leader, where nothing is
// checked.
func (m State) Update(b record.Batch) TxnEvent {
	pid := b.ProducerID()
	if pid == record.NoProducerID {
		return TxnEvent{}
	}
	if b.IsControl() {
		return m.updateMarker(b)
	}
	e, ok := m[pid]
	if !ok {
		e = NewEntry(b.ProducerEpoch())
		m[pid] = e
	}
	if b.ProducerEpoch() != e.Epoch {
		e.Epoch = b.ProducerEpoch()
		e.Batches = e.Batches[:0]
	}
	var ev TxnEvent
	if b.IsTransactional() && e.CurrentTxnFirstOffset < 0 {
		e.CurrentTxnFirstOffset = b.BaseOffset()
		ev = TxnEvent{Began: true, PID: pid, FirstOffset: b.BaseOffset()}
	}
	meta := BatchMetadata{
		FirstSeq:     b.BaseSequence(),
		LastSeq:      b.LastSequence(),
		FirstOffset:  b.BaseOffset(),
		LastOffset:   b.LastOffset(),
		MaxTimestamp: b.MaxTimestamp(),
	}
	if len(e.Batches) == NumBatchesToRetain {
		copy(e.Batches, e.Batches[1:])
		e.Batches = e.Batches[:NumBatchesToRetain-1]
	}
	e.Batches = append(e.Batches, meta)
	return ev
}

// updateMarker applies a control batch. An ABORT or COMMIT marker sets
// the producer's epoch (a newer one resets its sequences) and coordinator
// epoch and ends its ongoing transaction, if any. Other control records
// and undecodable ones change nothing, as in Kafka.
func (m State) updateMarker(b record.Batch) TxnEvent {
	mk, ok, err := record.ParseControl(b)
	if err != nil || !ok || (mk.Type != record.ControlAbort && mk.Type != record.ControlCommit) {
		return TxnEvent{}
	}
	pid := b.ProducerID()
	e, found := m[pid]
	if !found {
		e = NewEntry(b.ProducerEpoch())
		m[pid] = e
	}
	if b.ProducerEpoch() != e.Epoch {
		e.Epoch = b.ProducerEpoch()
		e.Batches = e.Batches[:0]
	}
	e.CoordinatorEpoch = mk.CoordinatorEpoch
	if e.CurrentTxnFirstOffset < 0 {
		return TxnEvent{}
	}
	ev := TxnEvent{Completed: true, Aborted: mk.Type == record.ControlAbort, PID: pid,
		FirstOffset: e.CurrentTxnFirstOffset, LastOffset: b.BaseOffset()}
	e.CurrentTxnFirstOffset = -1
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
// lack coordinatorEpoch and currentTxnFirstOffset (read as -1). Encode
// writes version 2; DecodeSnapshot reads both.
const (
	snapshotMagic   = "KBPS"
	snapshotVersion = 2
	snapshotHeader  = 4 + 2 + 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Encode is the snapshot of m, as the Log writes it to <offset>.snapshot.
func (m State) Encode() []byte {
	pids := make([]int64, 0, len(m))
	for pid := range m {
		pids = append(pids, pid)
	}
	sort.Slice(pids, func(i, j int) bool { return pids[i] < pids[j] })
	buf := make([]byte, snapshotHeader, snapshotHeader+4+len(m)*(23+NumBatchesToRetain*32))
	copy(buf, snapshotMagic)
	binary.BigEndian.PutUint16(buf[4:], snapshotVersion)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(pids)))
	for _, pid := range pids {
		e := m[pid]
		buf = binary.BigEndian.AppendUint64(buf, uint64(pid))
		buf = binary.BigEndian.AppendUint16(buf, uint16(e.Epoch))
		buf = binary.BigEndian.AppendUint32(buf, uint32(e.CoordinatorEpoch))
		buf = binary.BigEndian.AppendUint64(buf, uint64(e.CurrentTxnFirstOffset))
		buf = append(buf, byte(len(e.Batches)))
		for _, b := range e.Batches {
			buf = binary.BigEndian.AppendUint32(buf, uint32(b.FirstSeq))
			buf = binary.BigEndian.AppendUint32(buf, uint32(b.LastSeq))
			buf = binary.BigEndian.AppendUint64(buf, uint64(b.FirstOffset))
			buf = binary.BigEndian.AppendUint64(buf, uint64(b.LastOffset))
			buf = binary.BigEndian.AppendUint64(buf, uint64(b.MaxTimestamp))
		}
	}
	binary.BigEndian.PutUint32(buf[6:], crc32.Checksum(buf[snapshotHeader:], castagnoli))
	return buf
}

var errBadSnapshot = errors.New("bad producer snapshot")

// ErrNewerSnapshot is a snapshot in a version this build does not know
// (written by a newer kbroker): refused, never replaced by a replay.
var ErrNewerSnapshot = errors.New("producer snapshot of a newer version")

// DecodeSnapshot reads a snapshot written by Encode (or version 1). A bad
// one is an error; the Log then ignores it and replays the log instead.
// One of a newer version is ErrNewerSnapshot.
func DecodeSnapshot(buf []byte) (State, error) {
	if len(buf) < snapshotHeader+4 || string(buf[:4]) != snapshotMagic {
		return nil, fmt.Errorf("%w: bad header", errBadSnapshot)
	}
	v := binary.BigEndian.Uint16(buf[4:])
	if v > snapshotVersion {
		return nil, fmt.Errorf("%w: version %d, this build reads up to %d", ErrNewerSnapshot, v, snapshotVersion)
	}
	if v != 1 && v != snapshotVersion {
		return nil, fmt.Errorf("%w: version %d", errBadSnapshot, v)
	}
	if crc32.Checksum(buf[snapshotHeader:], castagnoli) != binary.BigEndian.Uint32(buf[6:]) {
		return nil, fmt.Errorf("%w: crc mismatch", errBadSnapshot)
	}
	p := buf[snapshotHeader:]
	n := binary.BigEndian.Uint32(p)
	p = p[4:]
	m := make(State)
	for range n {
		if len(p) < 11 {
			return nil, fmt.Errorf("%w: short entry", errBadSnapshot)
		}
		pid := int64(binary.BigEndian.Uint64(p))
		e := NewEntry(int16(binary.BigEndian.Uint16(p[8:])))
		p = p[10:]
		if v >= 2 {
			if len(p) < 13 {
				return nil, fmt.Errorf("%w: short entry", errBadSnapshot)
			}
			e.CoordinatorEpoch = int32(binary.BigEndian.Uint32(p))
			e.CurrentTxnFirstOffset = int64(binary.BigEndian.Uint64(p[4:]))
			p = p[12:]
		}
		nb := int(p[0])
		p = p[1:]
		if nb > NumBatchesToRetain || len(p) < nb*32 {
			return nil, fmt.Errorf("%w: short batches", errBadSnapshot)
		}
		for range nb {
			e.Batches = append(e.Batches, BatchMetadata{
				FirstSeq:     int32(binary.BigEndian.Uint32(p)),
				LastSeq:      int32(binary.BigEndian.Uint32(p[4:])),
				FirstOffset:  int64(binary.BigEndian.Uint64(p[8:])),
				LastOffset:   int64(binary.BigEndian.Uint64(p[16:])),
				MaxTimestamp: int64(binary.BigEndian.Uint64(p[24:])),
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

// TxnTracker orders the partition's transactions for the last stable
// offset, as Kafka's ProducerStateManager does with ongoingTxns and
// unreplicatedTxns. Not safe for concurrent use: the Log guards it with
// its mu.
type TxnTracker struct {
	// ongoing holds the transactions without a marker, by first offset.
	ongoing []TxnRange
	// unreplicated holds completed transactions, by marker offset, until
	// the high watermark passes their marker: until then a follower may
	// not have the marker, and the last stable offset must not move past
	// their first offset.
	unreplicated []TxnRange
}

// TxnRange is a transaction of one producer from its first offset to its
// marker (lastOffset, -1 while ongoing).
type TxnRange struct {
	ProducerID, FirstOffset, LastOffset int64
}

// NewTxnTracker rebuilds the ongoing transactions from a producer state
// (a snapshot); completed ones are not in snapshots, as in Kafka.
func NewTxnTracker(m State) TxnTracker {
	var t TxnTracker
	for pid, e := range m {
		if e.CurrentTxnFirstOffset >= 0 {
			t.ongoing = append(t.ongoing, TxnRange{ProducerID: pid, FirstOffset: e.CurrentTxnFirstOffset, LastOffset: -1})
		}
	}
	sort.Slice(t.ongoing, func(i, j int) bool { return t.ongoing[i].FirstOffset < t.ongoing[j].FirstOffset })
	return t
}

// Begin records a transaction starting at first. Offsets grow as batches
// are appended, so this is an append in practice.
func (t *TxnTracker) Begin(pid, first int64) {
	i := sort.Search(len(t.ongoing), func(i int) bool { return t.ongoing[i].FirstOffset > first })
	t.ongoing = append(t.ongoing, TxnRange{})
	copy(t.ongoing[i+1:], t.ongoing[i:])
	t.ongoing[i] = TxnRange{ProducerID: pid, FirstOffset: first, LastOffset: -1}
}

// Complete moves pid's transaction from ongoing to unreplicated.
func (t *TxnTracker) Complete(pid, first, last int64) {
	for i, r := range t.ongoing {
		if r.ProducerID == pid {
			t.ongoing = append(t.ongoing[:i], t.ongoing[i+1:]...)
			break
		}
	}
	t.unreplicated = append(t.unreplicated, TxnRange{ProducerID: pid, FirstOffset: first, LastOffset: last})
}

// LastStableOffsetAt is the last stable offset recorded with an aborted
// transaction in the .txnindex: the first offset of the earliest other
// ongoing transaction, or the offset after the marker (Kafka's
// ProducerStateManager.lastStableOffset(completedTxn)).
func (t *TxnTracker) LastStableOffsetAt(pid, marker int64) int64 {
	for _, r := range t.ongoing {
		if r.ProducerID != pid {
			return r.FirstOffset
		}
	}
	return marker + 1
}

// FirstUnstable returns the smallest first offset of an ongoing
// transaction or of a completed one whose marker is at or above hw.
func (t *TxnTracker) FirstUnstable(hw int64) (int64, bool) {
	first := int64(math.MaxInt64)
	if len(t.ongoing) > 0 {
		first = t.ongoing[0].FirstOffset
	}
	for _, r := range t.unreplicated {
		if r.LastOffset >= hw {
			first = min(first, r.FirstOffset)
		}
	}
	return first, first != math.MaxInt64
}

// OnHighWatermark forgets completed transactions whose marker is below hw.
func (t *TxnTracker) OnHighWatermark(hw int64) {
	i := 0
	for i < len(t.unreplicated) && t.unreplicated[i].LastOffset < hw {
		i++
	}
	if i > 0 {
		t.unreplicated = append(t.unreplicated[:0], t.unreplicated[i:]...)
	}
}

// Ongoing returns a copy of the ongoing transactions, by first offset.
func (t *TxnTracker) Ongoing() []TxnRange { return append([]TxnRange(nil), t.ongoing...) }
