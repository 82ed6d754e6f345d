package replication

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/storage"
)

// Log directory failure (Kafka's ReplicaManager.handleLogDirFailure). When
// storage takes a log directory offline (storage logdir_failure.go), Run
// takes every partition in it offline here: the partition leaves the
// hosted set (a request still holding it sees it lead no more, its
// follower fetcher stops), its log is closed without writing, and it is
// listed in OfflineReplicas with ErrLogDirOffline (KAFKA_STORAGE_ERROR to
// clients). The node reports the offline replicas to the controller,
// which moves their leadership and takes this broker out of their ISR
// (metadata offline_replicas.go); partitions in the other directories go
// on being served. Apply does not reopen them while their directory is
// offline: only a restart with the disk healthy does.

// handleLogDirFailure takes the partitions of offline log directories
// offline.
func (m *Manager) handleLogDirFailure() {
	taken := m.cfg.Logs.TakeOfflineLogs()
	var changed []TopicPartition
	m.mu.Lock()
	for _, dl := range taken {
		tp := TopicPartition{Topic: dl.Topic, Partition: dl.Partition}
		if p, ok := m.mu.partitions[tp]; ok {
			p.mu.Lock()
			p.mu.leader = metadata.NoLeader
			p.mu.Unlock()
			delete(m.mu.partitions, tp)
			changed = append(changed, tp)
		}
		m.markDirOfflineLocked(tp, fmt.Errorf("%s: %w", dl.Log.Dir(), storage.ErrLogDirOffline))
	}
	m.reconcileFetchersLocked()
	m.mu.Unlock()
	if len(taken) > 0 {
		m.cfg.Logger.Error("log dir failure: replicas taken offline", "replicas", len(taken),
			"offline_dirs", m.cfg.Logs.OfflineDirs())
	}
	for _, tp := range changed {
		m.hooks.roleChange(tp)
	}
	if m.cfg.OnLogDirFailure != nil {
		m.cfg.OnLogDirFailure()
	}
}

// markDirOfflineLocked records that tp is offline because its log
// directory is.
func (m *Manager) markDirOfflineLocked(tp TopicPartition, err error) {
	if _, again := m.mu.offline[tp]; !again {
		m.cfg.Logger.Warn("replica offline: its log dir is offline", "topic", tp.Topic, "partition", tp.Partition, "err", err)
	}
	m.mu.offline[tp] = fmt.Errorf("replica %s offline: %w", tp, err)
}

// ErrReplicaNotAvailable: REPLICA_NOT_AVAILABLE, AlterReplicaLogDirs for
// a replica this broker does not host (Kafka keeps this code there for
// compatibility rather than NOT_LEADER_OR_FOLLOWER).
var ErrReplicaNotAvailable = errors.New("replication: replica not available on this broker")

// AlterReplicaLogDir moves this broker's replica of tp to the log
// directory dir (AlterReplicaLogDirs, KIP-113) and returns once the move
// is under way; the replica stays online meanwhile (storage move.go).
// Like Kafka it first checks dir (ErrLogDirNotFound; ErrLogDirOffline
// while any directory is offline), remembers it for a replica not
// created yet, which then gets ErrReplicaNotAvailable, refuses an offline
// replica (KAFKA_STORAGE_ERROR), and does nothing for a replica already
// in dir. A second request for a replica being moved elsewhere takes
// effect when the first move ends.
func (m *Manager) AlterReplicaLogDir(tp TopicPartition, dir string) error {
	if err := m.cfg.Logs.CheckMoveTarget(dir); err != nil {
		return err
	}
	if err := m.cfg.Logs.SetPreferredDir(tp.Topic, tp.Partition, dir); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.mu.partitions[tp]; !ok {
		if err, offline := m.mu.offline[tp]; offline {
			return err
		}
		return fmt.Errorf("%w: %s", ErrReplicaNotAvailable, tp)
	}
	if _, moving := m.mu.moves[tp]; moving {
		m.mu.moves[tp] = dir
		return nil
	}
	if cur, ok := m.cfg.Logs.DirOf(tp.Topic, tp.Partition); ok && samePath(cur, dir) {
		return nil
	}
	m.mu.moves[tp] = dir
	if !m.spawn(func(ctx context.Context) { m.moveReplica(ctx, tp) }) {
		delete(m.mu.moves, tp)
		return fmt.Errorf("%w: %s: the replica manager is not running", ErrReplicaNotAvailable, tp)
	}
	return nil
}

// MovingReplicas returns the replicas being moved and their destination.
func (m *Manager) MovingReplicas() map[TopicPartition]string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make(map[TopicPartition]string, len(m.mu.moves))
	for tp, d := range m.mu.moves {
		out[tp] = d
	}
	return out
}

// moveReplica runs the moves of tp until it is in the directory last
// asked for, or a move fails.
func (m *Manager) moveReplica(ctx context.Context, tp TopicPartition) {
	for {
		m.mu.RLock()
		dir := m.mu.moves[tp]
		m.mu.RUnlock()
		err := m.cfg.Logs.MoveLog(ctx, tp.Topic, tp.Partition, dir)
		switch {
		case err != nil && ctx.Err() != nil:
			m.cfg.Logger.Info("log dir move stopped by shutdown", "topic", tp.Topic, "partition", tp.Partition, "dir", dir)
		case err != nil:
			m.cfg.Logger.Error("moving replica to another log dir", "topic", tp.Topic, "partition", tp.Partition, "dir", dir, "err", err)
		}
		m.mu.Lock()
		if err != nil || m.mu.moves[tp] == dir || ctx.Err() != nil {
			delete(m.mu.moves, tp)
			m.mu.Unlock()
			return
		}
		m.mu.Unlock() // asked for another directory meanwhile
	}
}

func samePath(a, b string) bool { return filepath.Clean(a) == filepath.Clean(b) }
