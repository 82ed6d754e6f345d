package storage

import (
	"errors"
	"math"

	"github.com/kbroker/kbroker/storage/integrity"
	"github.com/kbroker/kbroker/storage/logfs"
)

// Corrupt batches and the scrubber (package integrity). A read that finds
// a stored batch failing its check (readChunk) serves nothing from it on,
// logs it, and reports it to the Manager's Corruptions; the scrubber,
// run by Run, verifies the closed segments in the background and rechecks
// what it finds through such a read. The replica manager takes the
// reports and repairs the replica (replication corrupt.go).

// Corruptions are the corrupt batches the Manager's logs found: Count for
// the metric kbroker_log_corrupt_batches_total, Signal and Take for the
// replica manager.
func (m *Manager) Corruptions() *CorruptionReports { return m.corrupt }

// SetScrubRate sets the bytes per second the scrubber verifies
// (log.scrubber.bytes.per.second, integrity.DefaultBytesPerSecond unless
// set); 0 turns it off. It takes effect at once, also while Run runs.
func (m *Manager) SetScrubRate(bytesPerSecond int64) { m.scrubber.SetRate(bytesPerSecond) }

// ScrubStats reports the bytes the scrubber verified, the passes over
// every closed segment it completed and the corrupt batches it found.
func (m *Manager) ScrubStats() (bytes, passes, found int64) { return m.scrubber.Stats() }

// scrubSegments lists the closed segments of the open logs in online
// directories, taking each lock only to list.
func (m *Manager) scrubSegments() []integrity.Segment {
	m.mu.Lock()
	logs := make([]*Log, 0, len(m.mu.logs))
	for tp, l := range m.mu.logs {
		if d := m.dirOfPartitionLocked(tp); d != nil && d.offline() == nil {
			logs = append(logs, l)
		}
	}
	m.mu.Unlock()
	var out []integrity.Segment
	for _, l := range logs {
		l.mu.RLock()
		for i := 0; !l.mu.closed && l.mu.failed == nil && i < len(l.mu.segments)-1; i++ {
			s := l.mu.segments[i]
			out = append(out, integrity.Segment{Path: logfs.FileName(l.Dir(), s.base, logfs.LogSuffix),
				Base: s.base, Size: s.size, File: s.log, Recheck: l.recheck})
		}
		l.mu.RUnlock()
	}
	return out
}

// recheck reads the batch holding offset as a fetch does, which checks it
// and reports it if corrupt, and tells whether it is.
func (l *Log) recheck(offset int64) bool {
	_, err := l.Read(max(offset, l.LogStartOffset()), 1, math.MaxInt64, true)
	return errors.Is(err, ErrCorruptSegment)
}

// ReadLogBelow returns the bytes of the partition directory's segments up
// to the first batch whose base offset is >= offset, for comparing
// replicas byte for byte (integrity.ReadLogBelow).
func ReadLogBelow(dir string, offset int64) ([]byte, error) {
	return integrity.ReadLogBelow(dir, offset)
}
