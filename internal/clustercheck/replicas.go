package clustercheck

import (
	"bytes"
	"fmt"
	"path/filepath"

	"github.com/kbroker/kbroker/storage"
	"github.com/kbroker/kbroker/wire/record"
)

// PartitionDir is the directory of topic-partition under a log dir.
func PartitionDir(logDir, topic string, p int32) string {
	return filepath.Join(logDir, fmt.Sprintf("%s-%d", topic, p))
}

// ReplicaLogs reads every node's bytes of topic-partition p below the high
// watermark hw; logDirs maps node id to its log.dirs.
func ReplicaLogs(logDirs map[int32]string, topic string, p int32, hw int64) (map[int32][]byte, error) {
	out := map[int32][]byte{}
	for id, dir := range logDirs {
		b, err := storage.ReadLogBelow(PartitionDir(dir, topic, p), hw)
		if err != nil {
			return nil, fmt.Errorf("node %d: %w", id, err)
		}
		out[id] = b
	}
	return out, nil
}

// CompareReplicas checks that every node's log of partition p below the
// high watermark hw ends at offset hw-1 and that all are byte-identical.
// The error names the first node that differs and the batches at the
// first differing byte.
func CompareReplicas(logs map[int32][]byte, p int32, hw int64) error {
	ids := sortedKeys(logs)
	if len(ids) == 0 {
		return fmt.Errorf("p%d: no replica logs", p)
	}
	for _, id := range ids {
		if last := LastOffsetIn(logs[id]); last != hw-1 {
			return fmt.Errorf("p%d node %d: log below the high watermark %d ends at offset %d, want %d", p, id, hw, last, hw-1)
		}
	}
	ref := logs[ids[0]]
	for _, id := range ids[1:] {
		got := logs[id]
		if bytes.Equal(ref, got) {
			continue
		}
		d := firstDiff(ref, got)
		return fmt.Errorf("p%d: node %d and node %d differ below the high watermark %d (%d vs %d bytes), first at byte %d:\n  node %d: %s\n  node %d: %s",
			p, ids[0], id, hw, len(ref), len(got), d, ids[0], BatchAt(ref, d), id, BatchAt(got, d))
	}
	return nil
}

func firstDiff(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// LastOffsetIn returns the last offset of the last whole batch in log, or
// -1 for none.
func LastOffsetIn(log []byte) int64 {
	last := int64(-1)
	for len(log) > 0 {
		b, next, err := record.Parse(log)
		if err != nil {
			break
		}
		last = b.LastOffset()
		log = next
	}
	return last
}

// BatchAt describes the batch containing byte pos of log.
func BatchAt(log []byte, pos int) string {
	at := 0
	for len(log) > 0 {
		b, next, err := record.Parse(log)
		if err != nil {
			return fmt.Sprintf("unparseable at byte %d: %v", at, err)
		}
		if pos < at+len(b) {
			return fmt.Sprintf("batch at byte %d: base offset %d, last offset %d, leader epoch %d, producer %d/%d seq %d, crc %08x, %d bytes",
				at, b.BaseOffset(), b.LastOffset(), b.PartitionLeaderEpoch(), b.ProducerID(), b.ProducerEpoch(), b.BaseSequence(), b.CRC(), len(b))
		}
		at += len(b)
		log = next
	}
	return fmt.Sprintf("past the end (%d bytes)", at)
}
