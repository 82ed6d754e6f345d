package record

import (
	"encoding/binary"
	"fmt"
)

// ControlType is the type of a control record, the int16 after the
// version in its key (Kafka's ControlRecordType).
type ControlType int16

const (
	// ControlAbort ends a transaction whose records are discarded.
	ControlAbort ControlType = 0
	// ControlCommit ends a transaction whose records become visible.
	ControlCommit ControlType = 1
)

func (t ControlType) String() string {
	switch t {
	case ControlAbort:
		return "ABORT"
	case ControlCommit:
		return "COMMIT"
	}
	return fmt.Sprintf("UNKNOWN(%d)", int16(t))
}

// controlRecordLimit bounds the decoded size of a control batch's records:
// an end transaction marker is a few dozen bytes.
const controlRecordLimit = 64 << 10

// EndTxnMarker is the content of a transaction marker, the single record
// of a control batch written by WriteTxnMarkers:
//
//	key:   version int16 (0) | type int16 (0 = ABORT, 1 = COMMIT)
//	value: version int16 (0) | coordinatorEpoch int32
//
// The batch has the transactional and control attribute bits, the
// producer id and epoch of the transaction, and no sequence (-1).
type EndTxnMarker struct {
	Type             ControlType
	CoordinatorEpoch int32
}

// MarkerSpec is what BuildEndTxnMarker needs besides the marker.
type MarkerSpec struct {
	BaseOffset           int64
	PartitionLeaderEpoch int32
	Timestamp            int64 // base and max timestamp
	LogAppendTime        bool  // set the timestamp type bit
	ProducerID           int64
	ProducerEpoch        int16
}

// BuildEndTxnMarker builds an uncompressed control batch holding m.
func BuildEndTxnMarker(spec MarkerSpec, m EndTxnMarker) (Batch, error) {
	key := binary.BigEndian.AppendUint16(make([]byte, 2, 4), uint16(m.Type))
	value := binary.BigEndian.AppendUint32(make([]byte, 2, 6), uint32(m.CoordinatorEpoch))
	attrs := int16(TransactionalFlag | ControlFlag)
	if spec.LogAppendTime {
		attrs |= TimestampTypeMask
	}
	return Build(BatchSpec{
		BaseOffset:           spec.BaseOffset,
		PartitionLeaderEpoch: spec.PartitionLeaderEpoch,
		Attributes:           attrs,
		BaseTimestamp:        spec.Timestamp,
		MaxTimestamp:         spec.Timestamp,
		ProducerID:           spec.ProducerID,
		ProducerEpoch:        spec.ProducerEpoch,
		BaseSequence:         NoSequence,
	}, []Record{{Key: key, Value: value}})
}

// ParseControl decodes the first record of a control batch. ok is false
// for a control batch without records (emptied by a cleaner). The marker
// value is decoded only for ABORT and COMMIT; other control types (KRaft's)
// come back with CoordinatorEpoch -1.
func ParseControl(b Batch) (m EndTxnMarker, ok bool, err error) {
	if !b.IsControl() {
		return m, false, fmt.Errorf("%w: not a control batch", ErrInvalid)
	}
	if b.RecordCount() == 0 {
		return m, false, nil
	}
	done := false
	err = IterateCompacted(b, controlRecordLimit, func(r *Record) error {
		if done {
			return nil
		}
		done = true
		if len(r.Key) < 4 {
			return fmt.Errorf("%w: control record key of %d bytes", ErrCorrupt, len(r.Key))
		}
		m.Type = ControlType(binary.BigEndian.Uint16(r.Key[2:]))
		m.CoordinatorEpoch = -1
		if m.Type != ControlAbort && m.Type != ControlCommit {
			return nil
		}
		if len(r.Value) < 6 {
			return fmt.Errorf("%w: end transaction marker value of %d bytes", ErrCorrupt, len(r.Value))
		}
		m.CoordinatorEpoch = int32(binary.BigEndian.Uint32(r.Value[2:]))
		return nil
	})
	if err != nil {
		return EndTxnMarker{}, false, err
	}
	return m, done, nil
}
