package storage

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kbroker/kbroker/storage/logfs"
	"github.com/kbroker/kbroker/wire/record"
)

// leaderEpochFile is the partition's leader epoch cache (Kafka's
// LeaderEpochFileCache), in Kafka's text format:
//
//	0            version
//	2            number of entries
//	3 0          epoch startOffset
//	5 1200
const leaderEpochFile = "leader-epoch-checkpoint"

// UndefinedEpoch and UndefinedEpochOffset are EndOffsetForEpoch's answer
// for an epoch it cannot place (Kafka's UNDEFINED_EPOCH and
// UNDEFINED_EPOCH_OFFSET).
const (
	UndefinedEpoch       int32 = -1
	UndefinedEpochOffset int64 = -1
)

// epochEntry is one leader epoch and the first offset written in it.
type epochEntry struct {
	epoch       int32
	startOffset int64
}

func encodeEpochs(es []epochEntry) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "0\n%d\n", len(es))
	for _, e := range es {
		fmt.Fprintf(&b, "%d %d\n", e.epoch, e.startOffset)
	}
	return b.Bytes()
}

func decodeEpochs(data []byte) ([]epochEntry, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	var lines []string
	for sc.Scan() {
		lines = append(lines, strings.TrimSpace(sc.Text()))
	}
	if len(lines) > 0 {
		if v, err := strconv.Atoi(lines[0]); err == nil && v > 0 {
			return nil, fmt.Errorf("%w: leader epoch checkpoint version %d, this build reads 0", ErrNewerFormat, v)
		}
	}
	if len(lines) < 2 || lines[0] != "0" {
		return nil, errors.New("leader epoch checkpoint: bad version")
	}
	n, err := strconv.Atoi(lines[1])
	if err != nil || n < 0 || len(lines) < 2+n {
		return nil, fmt.Errorf("leader epoch checkpoint: bad count %q", lines[1])
	}
	out := make([]epochEntry, 0, n)
	for _, s := range lines[2 : 2+n] {
		f := strings.Fields(s)
		if len(f) != 2 {
			return nil, fmt.Errorf("leader epoch checkpoint: bad entry %q", s)
		}
		e, err1 := strconv.ParseInt(f[0], 10, 32)
		o, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || e < 0 || o < 0 ||
			(len(out) > 0 && (int32(e) <= out[len(out)-1].epoch || o < out[len(out)-1].startOffset)) {
			return nil, fmt.Errorf("leader epoch checkpoint: bad entry %q", s)
		}
		out = append(out, epochEntry{int32(e), o})
	}
	return out, nil
}

// assignEpochLocked records that epoch starts at startOffset, as Kafka's
// LeaderEpochFileCache.assign: entries with a greater or equal epoch or a
// greater or equal start offset are replaced. It reports a change.
func (l *Log) assignEpochLocked(epoch int32, startOffset int64) bool {
	if epoch < 0 {
		return false
	}
	es := l.mu.epochs
	if n := len(es); n > 0 && es[n-1].epoch == epoch && es[n-1].startOffset <= startOffset {
		return false
	}
	k := len(es)
	for k > 0 && (es[k-1].epoch >= epoch || es[k-1].startOffset >= startOffset) {
		k--
	}
	l.mu.epochs = append(es[:k], epochEntry{epoch, startOffset})
	return true
}

// noteBatchEpochLocked assigns b's partitionLeaderEpoch and writes the
// file if that changed the cache. A failed write is logged and retried
// at the next change or Close; recovery rebuilds the cache from the
// batches anyway.
func (l *Log) noteBatchEpochLocked(b record.Batch) {
	if l.assignEpochLocked(b.PartitionLeaderEpoch(), b.BaseOffset()) || l.mu.epochsDirty {
		l.writeEpochsLocked()
	}
}

func (l *Log) writeEpochsLocked() {
	err := logfs.WriteFileAtomic(l.fs, l.Dir(), filepath.Join(l.Dir(), leaderEpochFile), encodeEpochs(l.mu.epochs))
	l.mu.epochsDirty = err != nil
	if err != nil {
		l.logger.Error("writing leader epoch checkpoint", "dir", l.Dir(), "err", err)
	}
}

// truncateEpochsLocked drops entries starting at or after offset
// (Kafka's truncateFromEnd).
func (l *Log) truncateEpochsLocked(offset int64) bool {
	es := l.mu.epochs
	k := len(es)
	for k > 0 && es[k-1].startOffset >= offset {
		k--
	}
	if k == len(es) {
		return false
	}
	l.mu.epochs = es[:k]
	return true
}

// loadEpochs reads the leader epoch checkpoint; a missing or bad file
// gives an empty cache (recovery and later appends fill it). One in a
// newer format is refused (ErrNewerFormat), never overwritten.
func (l *Log) loadEpochs() error {
	path := filepath.Join(l.Dir(), leaderEpochFile)
	data, err := logfs.ReadFile(l.fs, path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err == nil {
		var es []epochEntry
		if es, err = decodeEpochs(data); err == nil {
			l.mu.epochs = es
			return nil
		}
		if errors.Is(err, ErrNewerFormat) {
			return fmt.Errorf("%w: %s: %w", ErrStorage, path, err)
		}
	}
	l.logger.Warn("ignoring leader epoch checkpoint", "dir", l.Dir(), "err", err)
	l.mu.epochsDirty = true
	return nil
}

// LatestEpoch returns the latest leader epoch in the log's epoch cache.
func (l *Log) LatestEpoch() (epoch int32, ok bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if n := len(l.mu.epochs); n > 0 {
		return l.mu.epochs[n-1].epoch, true
	}
	return UndefinedEpoch, false
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch: for the latest epoch,
// the log end offset; for an earlier one, the start offset of the first
// epoch greater than it, with the largest known epoch <= the requested
// one. An epoch below the first known one, above the latest, or with an
// empty cache gives (UndefinedEpochOffset, UndefinedEpoch).
func (l *Log) EndOffsetForEpoch(epoch int32) (endOffset int64, epochFound int32) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	es := l.mu.epochs
	n := len(es)
	switch {
	case n == 0 || epoch < 0 || epoch < es[0].epoch || epoch > es[n-1].epoch:
		return UndefinedEpochOffset, UndefinedEpoch
	case epoch == es[n-1].epoch:
		return l.mu.logEndOffset, epoch
	}
	i := 0
	for es[i+1].epoch <= epoch {
		i++
	}
	return es[i+1].startOffset, es[i].epoch
}
