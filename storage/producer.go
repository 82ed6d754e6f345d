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

// producerEntry is the state of one producer id: its epoch and its last
// few batches, oldest first.
type producerEntry struct {
	epoch   int16
	batches []batchMeta
}

func (e *producerEntry) last() batchMeta { return e.batches[len(e.batches)-1] }

// producerStateMap follows Kafka's ProducerStateManager for idempotent
// producers (transactions are not handled). Guarded by the Log's mu.
type producerStateMap map[int64]*producerEntry

// check validates b (already offset-less) against the producer's state. It
// returns the cached batch if b is a retry of one of the last batches.
func (m producerStateMap) check(b record.Batch) (*batchMeta, error) {
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

// update records an appended batch (offsets assigned). It is used both
// after a checked append and when replaying the log, where nothing is
// checked.
func (m producerStateMap) update(b record.Batch) {
	pid := b.ProducerID()
	if pid == record.NoProducerID {
		return
	}
	e, ok := m[pid]
	if !ok {
		e = &producerEntry{epoch: b.ProducerEpoch()}
		m[pid] = e
	}
	if b.ProducerEpoch() != e.epoch {
		e.epoch = b.ProducerEpoch()
		e.batches = e.batches[:0]
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
}

// Snapshot file format (all integers big-endian):
//
//	+--------+---------+--------+-----------+------------------------+
//	| "KBPS" | version | crc32c | count u32 | count producer entries |
//	| 4      | u16 = 1 | u32    |           |                        |
//	+--------+---------+--------+-----------+------------------------+
//	entry: producerId i64, epoch i16, n u8, n × batch
//	batch: firstSeq i32, lastSeq i32, firstOffset i64, lastOffset i64,
//	       maxTimestamp i64
//
// The CRC-32C covers everything after the crc field.
const (
	snapshotMagic   = "KBPS"
	snapshotVersion = 1
	snapshotHeader  = 4 + 2 + 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func (m producerStateMap) encode() []byte {
	pids := make([]int64, 0, len(m))
	for pid := range m {
		pids = append(pids, pid)
	}
	sort.Slice(pids, func(i, j int) bool { return pids[i] < pids[j] })
	buf := make([]byte, snapshotHeader, snapshotHeader+4+len(m)*(11+numBatchesToRetain*32))
	copy(buf, snapshotMagic)
	binary.BigEndian.PutUint16(buf[4:], snapshotVersion)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(pids)))
	for _, pid := range pids {
		e := m[pid]
		buf = binary.BigEndian.AppendUint64(buf, uint64(pid))
		buf = binary.BigEndian.AppendUint16(buf, uint16(e.epoch))
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
	if v := binary.BigEndian.Uint16(buf[4:]); v != snapshotVersion {
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
		e := &producerEntry{epoch: int16(binary.BigEndian.Uint16(p[8:]))}
		nb := int(p[10])
		p = p[11:]
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
