package tiered

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/storage"
	"github.com/kbroker/kbroker/storage/remote"
)

// Metadata is what the manager needs of the metadata store.
type Metadata interface {
	Image() *metadata.Image
	PutRemoteSegment(ctx context.Context, p metadata.RemotePartition, seg metadata.RemoteSegment) error
}

// Partitions lists the partitions hosted here (replication.Manager).
type Partitions interface {
	Partitions() []*replication.Partition
}

// Config is the manager's share of the broker config and its
// collaborators.
type Config struct {
	NodeID     int32
	Store      remote.Storage
	Reader     *remote.Reader // reads remote segments; closed by the caller
	Metadata   Metadata
	Partitions Partitions
	Logger     *slog.Logger
	Now        func() time.Time // nil: time.Now

	Interval        time.Duration // remote.log.manager.task.interval.ms
	Copiers         int           // remote.log.manager.copier.thread.pool.size
	RetryBackoff    time.Duration // remote.log.manager.task.retry.backoff.ms
	RetryBackoffMax time.Duration // remote.log.manager.task.retry.backoff.max.ms
	FetchMaxWait    time.Duration // remote.fetch.max.wait.ms
	// CallTimeout bounds one store call or metadata proposal (0: 30 s).
	CallTimeout time.Duration
}

// Manager is the remote log manager of one broker.
type Manager struct {
	cfg     Config
	metrics *metrics
	sem     chan struct{}
	wg      sync.WaitGroup

	mu struct {
		sync.Mutex
		tasks map[replication.TopicPartition]*taskState
	}
}

// taskState is one partition's task: running, or when it may run again.
type taskState struct {
	running   bool
	failures  int
	notBefore time.Time
}

// New returns a manager; Run starts it.
func New(cfg Config) *Manager {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 30 * time.Second
	}
	cfg.Copiers = max(cfg.Copiers, 1)
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = 30 * time.Second
	}
	if cfg.FetchMaxWait <= 0 {
		cfg.FetchMaxWait = 500 * time.Millisecond
	}
	m := &Manager{cfg: cfg, metrics: newMetrics(), sem: make(chan struct{}, cfg.Copiers)}
	m.mu.tasks = map[replication.TopicPartition]*taskState{}
	return m
}

// Collectors are the manager's metrics, for the node's registry.
func (m *Manager) Collectors() []prometheus.Collector { return m.metrics.collectors() }

// Run copies and deletes remote segments every Interval until ctx ends,
// then waits for the tasks in flight (they stop at ctx's end).
func (m *Manager) Run(ctx context.Context) {
	t := time.NewTicker(m.cfg.Interval)
	defer t.Stop()
	for {
		m.round(ctx)
		select {
		case <-ctx.Done():
			m.wg.Wait()
			return
		case <-t.C:
		}
	}
}

// round updates every hosted remote-storage log's copied offset and
// starts the tasks of the partitions led here that are due.
func (m *Manager) round(ctx context.Context) {
	img := m.cfg.Metadata.Image()
	now := m.cfg.Now()
	remoteSize := map[string]int64{}
	lag := map[string]int64{}
	for _, p := range m.cfg.Partitions.Partitions() {
		st := p.State()
		if !st.Config.RemoteStorageEnable {
			continue
		}
		segs := img.RemoteSegments(p.TopicID, p.TP.Partition)
		copied := copiedEnd(segs)
		p.Log().SetRemoteCopiedOffset(copied)
		if st.Leader != m.cfg.NodeID {
			continue
		}
		for _, s := range segs {
			if s.State == metadata.RemoteCopyFinished {
				remoteSize[p.TP.Topic] += s.Size
			}
		}
		for _, cs := range p.Log().ClosedSegments(copied, p.HighWatermark()) {
			lag[p.TP.Topic] += cs.Size
		}
		m.maybeStart(ctx, p, now)
	}
	m.metrics.setGauges(remoteSize, lag)
}

func (m *Manager) maybeStart(ctx context.Context, p *replication.Partition, now time.Time) {
	m.mu.Lock()
	ts := m.mu.tasks[p.TP]
	if ts == nil {
		ts = &taskState{}
		m.mu.tasks[p.TP] = ts
	}
	if ts.running || now.Before(ts.notBefore) || ctx.Err() != nil {
		m.mu.Unlock()
		return
	}
	ts.running = true
	m.mu.Unlock()
	m.wg.Go(func() {
		err := m.runTask(ctx, p)
		m.mu.Lock()
		defer m.mu.Unlock()
		ts.running = false
		if err == nil {
			ts.failures, ts.notBefore = 0, time.Time{}
			return
		}
		ts.failures++
		ts.notBefore = m.cfg.Now().Add(backoff(m.cfg.RetryBackoff, m.cfg.RetryBackoffMax, ts.failures))
		if ctx.Err() == nil {
			m.cfg.Logger.Warn("remote log task failed; retrying after a backoff", "topic", p.TP.Topic, "partition", p.TP.Partition,
				"failures", ts.failures, "retry_at", ts.notBefore, "err", err)
		}
	})
}

// backoff is base doubled per failure after the first, at most maxWait.
func backoff(base, maxWait time.Duration, failures int) time.Duration {
	d := base
	for i := 1; i < failures && d < maxWait; i++ {
		d *= 2
	}
	return min(d, maxWait)
}

func (m *Manager) runTask(ctx context.Context, p *replication.Partition) error {
	select {
	case m.sem <- struct{}{}:
		defer func() { <-m.sem }()
	case <-ctx.Done():
		return ctx.Err()
	}
	return m.task(ctx, p)
}

// copiedEnd is the last offset of the finished remote segments, -1 when
// none.
func copiedEnd(segs []*metadata.RemoteSegment) int64 {
	end := int64(-1)
	for _, s := range segs {
		if s.State == metadata.RemoteCopyFinished {
			end = max(end, s.EndOffset)
		}
	}
	return end
}

// task is one pass over a partition this broker leads: clean up what
// interrupted copies and deletes left, apply total retention to the
// remote segments, then copy the closed segments below the last stable
// offset that are not remote yet, oldest first.
func (m *Manager) task(ctx context.Context, p *replication.Partition) error {
	st := p.State()
	if st.Leader != m.cfg.NodeID || !st.Config.RemoteStorageEnable {
		return nil
	}
	w := &writer{m: m, p: p, rp: metadata.RemotePartition{TopicID: p.TopicID, Partition: p.TP.Partition}, epoch: st.LeaderEpoch}
	segs := m.cfg.Metadata.Image().RemoteSegments(p.TopicID, p.TP.Partition)
	for _, s := range segs {
		if s.State == metadata.RemoteCopyStarted || s.State == metadata.RemoteDeleteStarted {
			// Started by an earlier leader, or by an attempt of ours
			// that failed: nothing reads it; its objects go.
			if err := w.delete(ctx, *s); err != nil {
				return err
			}
		}
	}
	for _, s := range expired(segs, st.Config.RetentionMs, st.Config.RetentionBytes, p.Log().Size(), p.LocalLogStartOffset(), m.cfg.Now()) {
		if err := w.delete(ctx, *s); err != nil {
			return err
		}
		m.cfg.Logger.Info("remote retention deleted a segment", "topic", p.TP.Topic, "partition", p.TP.Partition,
			"base", s.BaseOffset, "end", s.EndOffset)
	}
	if st.Config.RemoteLogCopyDisable {
		return nil
	}
	copied := copiedEnd(segs)
	hw := p.HighWatermark()
	upTo := min(hw, p.Log().LastStableOffset(hw))
	for _, cs := range p.Log().ClosedSegments(copied, upTo) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err := w.copy(ctx, cs); err != nil {
			return err
		}
		p.Log().SetRemoteCopiedOffset(max(p.Log().RemoteCopiedOffset(), cs.EndOffset))
	}
	return nil
}

// expired returns the finished remote segments total retention deletes,
// oldest first: those whose newest record is older than retentionMs
// (-1: forever), then those that can go while the whole log (the remote
// segments below the local log start, and the local log) stays at or
// above retentionBytes (-1: no limit).
func expired(segs []*metadata.RemoteSegment, retentionMs, retentionBytes, localSize, localStart int64, now time.Time) []*metadata.RemoteSegment {
	var finished []*metadata.RemoteSegment
	for _, s := range segs {
		if s.State == metadata.RemoteCopyFinished {
			finished = append(finished, s)
		}
	}
	n := 0
	if retentionMs >= 0 {
		for n < len(finished) && finished[n].MaxTimestamp >= 0 && now.UnixMilli()-finished[n].MaxTimestamp > retentionMs {
			n++
		}
	}
	if retentionBytes >= 0 {
		total := localSize
		for _, s := range finished[n:] {
			if s.EndOffset < localStart {
				total += s.Size
			}
		}
		for n < len(finished) && finished[n].EndOffset < localStart && total-finished[n].Size >= retentionBytes {
			total -= finished[n].Size
			n++
		}
	}
	return finished[:n]
}

// writer moves one partition's remote segments, as its leader at epoch.
type writer struct {
	m     *Manager
	p     *replication.Partition
	rp    metadata.RemotePartition
	epoch int32
}

func (w *writer) put(ctx context.Context, seg metadata.RemoteSegment, state metadata.RemoteSegmentState) error {
	seg.State, seg.Broker, seg.LeaderEpoch = state, w.m.cfg.NodeID, w.epoch
	ctx, cancel := context.WithTimeout(ctx, w.m.cfg.CallTimeout)
	defer cancel()
	if err := w.m.cfg.Metadata.PutRemoteSegment(ctx, w.rp, seg); err != nil {
		return fmt.Errorf("remote segment %x of %s to %v: %w", seg.ID, w.p.TP, state, err)
	}
	return nil
}

func (w *writer) segment(seg metadata.RemoteSegment) remote.Segment {
	return remote.Segment{Topic: w.p.TP.Topic, TopicID: w.p.TopicID, Partition: w.p.TP.Partition, ID: seg.ID,
		BaseOffset: seg.BaseOffset, EndOffset: seg.EndOffset, Size: seg.Size}
}

// copy uploads one closed segment under a new id between its
// COPY_SEGMENT_STARTED and COPY_SEGMENT_FINISHED records; a failed
// upload is deleted at once (or by the next task).
func (w *writer) copy(ctx context.Context, cs storage.ClosedSegment) error {
	seg := metadata.RemoteSegment{ID: remote.NewSegmentID(), BaseOffset: cs.BaseOffset, EndOffset: cs.EndOffset,
		MaxTimestamp: cs.MaxTimestamp, Size: cs.Size}
	if err := w.put(ctx, seg, metadata.RemoteCopyStarted); err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, w.m.cfg.CallTimeout)
	err := w.m.cfg.Store.CopySegment(cctx, w.segment(seg), remote.Files{
		Log: cs.Log, OffsetIndex: cs.OffsetIndex, TimeIndex: cs.TimeIndex, TxnIndex: cs.TxnIndex,
		ProducerSnapshot: cs.ProducerSnapshot, LeaderEpochs: cs.LeaderEpochs,
	})
	cancel()
	if err != nil {
		w.m.metrics.copyErrors.WithLabelValues(w.p.TP.Topic).Inc()
		seg.State = metadata.RemoteCopyStarted
		if derr := w.delete(ctx, seg); derr != nil {
			err = errors.Join(err, derr)
		}
		return fmt.Errorf("copying segment %d of %s: %w", cs.BaseOffset, w.p.TP, err)
	}
	if err := w.put(ctx, seg, metadata.RemoteCopyFinished); err != nil {
		return err
	}
	w.m.metrics.copyBytes.WithLabelValues(w.p.TP.Topic).Add(float64(cs.Size))
	w.m.cfg.Logger.Info("copied segment to remote storage", "topic", w.p.TP.Topic, "partition", w.p.TP.Partition,
		"base", cs.BaseOffset, "end", cs.EndOffset, "bytes", cs.Size)
	return nil
}

// delete removes a remote segment: DELETE_SEGMENT_STARTED, its objects,
// DELETE_SEGMENT_FINISHED.
func (w *writer) delete(ctx context.Context, seg metadata.RemoteSegment) error {
	if seg.State != metadata.RemoteDeleteStarted {
		if err := w.put(ctx, seg, metadata.RemoteDeleteStarted); err != nil {
			return err
		}
	}
	cctx, cancel := context.WithTimeout(ctx, w.m.cfg.CallTimeout)
	err := w.m.cfg.Store.DeleteSegment(cctx, w.segment(seg))
	cancel()
	if err != nil {
		w.m.metrics.deleteErrors.WithLabelValues(w.p.TP.Topic).Inc()
		return fmt.Errorf("deleting remote segment %x of %s: %w", seg.ID, w.p.TP, err)
	}
	return w.put(ctx, seg, metadata.RemoteDeleteFinished)
}
