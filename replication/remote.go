package replication

// Reads below the local log start of a partition with remote storage
// (tiered storage, KIP-405): the leader serves them from the remote log
// (package tiered, through RemoteLog), and the partition's log start
// offset is the remote log's when it starts earlier. Followers are not
// served from the remote log: a follower behind the leader's local log
// start restarts at it (follower.go), as Kafka's followers rebuild only
// the auxiliary state of the remote part.

import (
	"context"
	"fmt"
)

// RemoteLog is the part of the logs that is only in remote storage.
// Implementations are safe for concurrent use and bound their own waits.
type RemoteLog interface {
	// LogStartOffset is the first offset of tp's remote log; ok is false
	// when it has none.
	LogStartOffset(tp TopicPartition, topicID [16]byte) (offset int64, ok bool)
	// Read returns whole batches of tp's remote log from the one holding
	// offset, at most maxBytes (or the first batch whatever its size when
	// minOneBatch); storage.ErrOffsetOutOfRange when the remote log does
	// not hold offset. It may return no batches when the store did not
	// answer in time.
	Read(ctx context.Context, tp TopicPartition, topicID [16]byte, offset int64, maxBytes int, minOneBatch bool) ([]byte, error)
}

// SetRemoteLog makes the partitions with remote.storage.enable serve
// reads below their local log start from r. Call it before Run.
func (m *Manager) SetRemoteLog(r RemoteLog) { m.hooks.remote.Store(&r) }

// remoteLog is the partition's remote log, nil without remote storage.
func (p *Partition) remoteLog() RemoteLog {
	if p.hooks == nil {
		return nil
	}
	r := p.hooks.remote.Load()
	if r == nil {
		return nil
	}
	p.mu.RLock()
	on := p.mu.cfg.RemoteStorageEnable
	p.mu.RUnlock()
	if !on {
		return nil
	}
	return *r
}

// LocalLogStartOffset returns the first offset on this broker's disk
// (Kafka's local log start offset, ListOffsets' EARLIEST_LOCAL_TIMESTAMP).
func (p *Partition) LocalLogStartOffset() int64 { return p.log.LogStartOffset() }

// readRemote serves a read below the local log start from the remote log.
func (p *Partition) readRemote(r RemoteLog, offset int64, maxBytes int, minOneBatch bool, hw int64) (FetchResult, error) {
	recs, err := r.Read(context.Background(), p.TP, p.TopicID, offset, maxBytes, minOneBatch)
	if err != nil {
		return FetchResult{}, fmt.Errorf("remote read of %s at %d: %w", p.TP, offset, err)
	}
	return FetchResult{Records: recs, HighWatermark: hw, LogStartOffset: p.LogStartOffset()}, nil
}
