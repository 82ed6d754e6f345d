package storage

// The storage side of tiered storage (package tiered does the rest): the
// closed segments a leader may copy, and local retention that deletes
// only what the remote store holds.
//
// With LogConfig.RemoteStorageEnable, ApplyRetention applies
// local.retention.ms and local.retention.bytes (-2: retention.ms and
// retention.bytes) instead of the total retention, and deletes no segment
// holding an offset above the remote copied offset
// (SetRemoteCopiedOffset, -1 until the metadata says what is remote):
// local deletion of a segment whose upload has not finished would lose
// its records. retention.ms and retention.bytes then bound the whole log,
// remote segments included, which package tiered applies to the store.

import (
	"errors"
	"io/fs"
	"os"

	"github.com/kbroker/kbroker/storage/logfs"
)

// ClosedSegment is a segment that takes no more appends, as its files are
// named on disk.
type ClosedSegment struct {
	BaseOffset   int64
	EndOffset    int64 // last offset, inclusive (the next segment's base - 1)
	Size         int64
	MaxTimestamp int64
	// The files; TxnIndex and ProducerSnapshot are "" when absent.
	Log, OffsetIndex, TimeIndex, TxnIndex, ProducerSnapshot string
	// LeaderEpochs is the leader epoch checkpoint (Kafka's format) of
	// the epochs that start at or below EndOffset.
	LeaderEpochs []byte
}

// ClosedSegments returns the inactive segments whose every offset is
// below upTo (the high watermark or the last stable offset), oldest
// first, from the first one holding an offset above after.
func (l *Log) ClosedSegments(after, upTo int64) []ClosedSegment {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.mu.closed {
		return nil
	}
	var out []ClosedSegment
	segs := l.mu.segments
	for i := 0; i+1 < len(segs); i++ {
		s, next := segs[i], segs[i+1].base
		if next-1 <= after || s.size == 0 {
			continue
		}
		if next > upTo {
			break
		}
		dir := l.Dir()
		cs := ClosedSegment{
			BaseOffset: s.base, EndOffset: next - 1, Size: s.size, MaxTimestamp: s.maxTimestamp,
			Log:         logfs.FileName(dir, s.base, logfs.LogSuffix),
			OffsetIndex: logfs.FileName(dir, s.base, logfs.IndexSuffix),
			TimeIndex:   logfs.FileName(dir, s.base, logfs.TimeIndexSuffix),
		}
		if s.txn != nil {
			cs.TxnIndex = logfs.FileName(dir, s.base, logfs.TxnIndexSuffix)
		}
		if p := logfs.FileName(dir, next, logfs.SnapshotSuffix); exists(p) {
			cs.ProducerSnapshot = p
		}
		var es []epochEntry
		for _, e := range l.mu.epochs {
			if e.startOffset <= cs.EndOffset {
				es = append(es, e)
			}
		}
		cs.LeaderEpochs = encodeEpochs(es)
		out = append(out, cs)
	}
	return out
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return !errors.Is(err, fs.ErrNotExist)
}

// SetRemoteCopiedOffset records the last offset the remote store holds
// (-1: none): local retention of a remote-storage log deletes no segment
// with a later offset.
func (l *Log) SetRemoteCopiedOffset(offset int64) { l.remoteCopied.Store(offset) }

// RemoteCopiedOffset is what SetRemoteCopiedOffset last set (-1 at first).
func (l *Log) RemoteCopiedOffset() int64 { return l.remoteCopied.Load() }

// localRetention returns the retention limits ApplyRetention applies:
// the local ones for a remote-storage log.
func (c *LogConfig) localRetention(retentionMs, retentionBytes int64) (int64, int64) {
	if !c.RemoteStorageEnable {
		return retentionMs, retentionBytes
	}
	ms, bytes := c.LocalRetentionMs, c.LocalRetentionBytes
	if ms == -2 {
		ms = retentionMs
	}
	if bytes == -2 {
		bytes = retentionBytes
	}
	return ms, bytes
}

// remoteCapLocked lowers n, the count of oldest segments retention would
// delete, so that none holds an offset the remote store does not.
func (l *Log) remoteCapLocked(n int) int {
	if !l.config().RemoteStorageEnable {
		return n
	}
	copied := l.remoteCopied.Load()
	for n > 0 && (n >= len(l.mu.segments) || l.mu.segments[n].base-1 > copied) {
		n--
	}
	return n
}
