package tiered

import (
	"context"
	"errors"
	"fmt"

	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/storage"
	"github.com/kbroker/kbroker/storage/remote"
)

var _ replication.RemoteLog = (*Manager)(nil)

// LogStartOffset implements replication.RemoteLog: the base offset of the
// first finished remote segment.
func (m *Manager) LogStartOffset(tp replication.TopicPartition, topicID [16]byte) (int64, bool) {
	for _, s := range m.cfg.Metadata.Image().RemoteSegments(topicID, tp.Partition) {
		if s.State == metadata.RemoteCopyFinished {
			return s.BaseOffset, true
		}
	}
	return 0, false
}

// Read implements replication.RemoteLog: batches of the finished remote
// segment holding offset, through the Reader's cache, waiting at most
// FetchMaxWait (then no batches; the fetch in flight fills the cache for
// the consumer's next try).
func (m *Manager) Read(ctx context.Context, tp replication.TopicPartition, topicID [16]byte, offset int64, maxBytes int, minOneBatch bool) ([]byte, error) {
	var seg *metadata.RemoteSegment
	for _, s := range m.cfg.Metadata.Image().RemoteSegments(topicID, tp.Partition) {
		if s.State == metadata.RemoteCopyFinished && s.BaseOffset <= offset && offset <= s.EndOffset {
			seg = s
			break
		}
	}
	if seg == nil {
		return nil, fmt.Errorf("%w: offset %d of %s is not in remote storage", storage.ErrOffsetOutOfRange, offset, tp)
	}
	ctx, cancel := context.WithTimeout(ctx, m.cfg.FetchMaxWait)
	defer cancel()
	recs, err := m.cfg.Reader.Read(ctx, remote.Segment{Topic: tp.Topic, TopicID: topicID, Partition: tp.Partition, ID: seg.ID,
		BaseOffset: seg.BaseOffset, EndOffset: seg.EndOffset, Size: seg.Size}, offset, maxBytes, minOneBatch)
	switch {
	case err == nil:
		m.metrics.fetchBytes.WithLabelValues(tp.Topic).Add(float64(len(recs)))
		return recs, nil
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		return nil, nil
	case errors.Is(err, remote.ErrNotFound):
		// Deleted by retention since the image was read.
		return nil, fmt.Errorf("%w: %v", storage.ErrOffsetOutOfRange, err)
	}
	m.metrics.fetchErrors.WithLabelValues(tp.Topic).Inc()
	return nil, err
}
