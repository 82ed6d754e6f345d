package replication

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/storage"
)

// ImageSource is the part of the metadata store the manager follows.
type ImageSource interface {
	Image() *metadata.Image
	Changed() <-chan struct{}
}

// ManagerConfig configures a Manager.
type ManagerConfig struct {
	NodeID int32
	Logs   *storage.Manager
	Logger *slog.Logger
	// TopicConfig resolves a topic's config overrides against the broker's
	// defaults.
	TopicConfig func(overrides map[string]string) config.TopicConfig
}

// Manager holds the partitions this broker hosts and keeps their roles in
// line with the metadata image.
type Manager struct {
	cfg ManagerConfig

	mu struct {
		sync.RWMutex
		partitions map[TopicPartition]*Partition
		applied    uint64 // image offset last applied
	}
}

// NewManager returns a manager with no partitions; Apply or Run fills it.
func NewManager(cfg ManagerConfig) *Manager {
	m := &Manager{cfg: cfg}
	m.mu.partitions = make(map[TopicPartition]*Partition)
	return m
}

// Partition returns a hosted partition.
func (m *Manager) Partition(tp TopicPartition) (*Partition, error) {
	m.mu.RLock()
	p, ok := m.mu.partitions[tp]
	m.mu.RUnlock()
	if !ok {
		return nil, ErrUnknownTopicOrPartition
	}
	return p, nil
}

// LeaderPartition returns a partition this broker leads.
func (m *Manager) LeaderPartition(tp TopicPartition) (*Partition, error) {
	p, err := m.Partition(tp)
	if err != nil {
		return nil, err
	}
	if !p.IsLeader() {
		return nil, ErrNotLeader
	}
	return p, nil
}

// Partitions returns every hosted partition, in no particular order.
func (m *Manager) Partitions() []*Partition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*Partition, 0, len(m.mu.partitions))
	for _, p := range m.mu.partitions {
		out = append(out, p)
	}
	return out
}

// Run applies every new metadata image until ctx is cancelled.
func (m *Manager) Run(ctx context.Context, src ImageSource) {
	for {
		changed := src.Changed()
		if err := m.Apply(src.Image()); err != nil {
			m.cfg.Logger.Error("applying metadata image", "err", err)
			// Retry later rather than spin: a disk error will not fix
			// itself in a millisecond.
			select {
			case <-time.After(time.Second):
			case <-ctx.Done():
				return
			}
			continue
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

// Apply makes the hosted partitions match img: it opens or creates the log
// of every partition that lists this broker as a replica, updates its
// leader, leader epoch and ISR, and removes partitions whose topic is gone
// or that no longer list this broker. It is idempotent and safe to call
// from several goroutines (handlers call it to see a topic they just
// created without waiting for Run).
func (m *Manager) Apply(img *metadata.Image) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if img.Offset != 0 && img.Offset <= m.mu.applied {
		return nil
	}
	want := make(map[TopicPartition]bool)
	var errs []error
	for _, t := range img.Topics {
		cfg := m.cfg.TopicConfig(t.Configs)
		for _, mp := range t.Partitions {
			if !slices.Contains(mp.Replicas, m.cfg.NodeID) {
				continue
			}
			tp := TopicPartition{Topic: t.Name, Partition: mp.ID}
			want[tp] = true
			p, ok := m.mu.partitions[tp]
			if ok && p.TopicID != t.ID {
				// The topic was deleted and re-created under the same name.
				if err := m.removeLocked(tp); err != nil {
					errs = append(errs, err)
					continue
				}
				ok = false
			}
			if !ok {
				log, err := m.cfg.Logs.GetOrCreate(tp.Topic, tp.Partition, logConfig(cfg))
				if err != nil {
					errs = append(errs, fmt.Errorf("opening log %s: %w", tp, err))
					continue
				}
				p = &Partition{TP: tp, TopicID: t.ID, log: log, nodeID: m.cfg.NodeID,
					logger: m.cfg.Logger.With("topic", tp.Topic, "partition", tp.Partition)}
				p.mu.followerLEO = make(map[int32]int64)
				// Start from the checkpointed high watermark so a restarted
				// leader never exposes less than it had committed.
				p.highWatermark.Store(log.HighWatermarkCheckpoint())
				m.mu.partitions[tp] = p
			}
			p.update(mp.Leader, mp.LeaderEpoch, mp.PartitionEpoch, mp.Replicas, mp.ISR, cfg)
		}
	}
	for tp := range m.mu.partitions {
		if !want[tp] {
			if err := m.removeLocked(tp); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	m.mu.applied = img.Offset
	return nil
}

func (m *Manager) removeLocked(tp TopicPartition) error {
	delete(m.mu.partitions, tp)
	if err := m.cfg.Logs.Delete(tp.Topic, tp.Partition); err != nil {
		return fmt.Errorf("deleting log %s: %w", tp, err)
	}
	m.cfg.Logger.Info("removed partition", "topic", tp.Topic, "partition", tp.Partition)
	return nil
}

// logConfig maps a topic's resolved config to its log's.
func logConfig(c config.TopicConfig) storage.LogConfig {
	lc := storage.DefaultLogConfig()
	lc.SegmentBytes = c.SegmentBytes
	lc.SegmentMs = time.Duration(c.SegmentMs) * time.Millisecond
	lc.IndexIntervalBytes = int(c.IndexIntervalBytes)
	lc.SegmentIndexBytes = int(c.SegmentIndexBytes)
	lc.MaxMessageBytes = int(c.MaxMessageBytes)
	lc.FlushMessages = c.FlushMessages
	lc.RetentionMs = c.RetentionMs
	lc.RetentionBytes = c.RetentionBytes
	if c.FlushMs > 0 && c.FlushMs < int64(time.Duration(1<<62)/time.Millisecond) {
		lc.FlushInterval = time.Duration(c.FlushMs) * time.Millisecond
	}
	return lc
}
