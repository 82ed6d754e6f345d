package replication

import (
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/storage"
	"github.com/kbroker/kbroker/wire/record"
)

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

// Partition is one partition hosted by this broker: its log and its role.
type Partition struct {
	TP      TopicPartition
	TopicID [16]byte
	log     *storage.Log
	nodeID  int32
	logger  *slog.Logger

	// leaderThrottled and followerThrottled: this broker's replica of
	// the partition is listed in the topic's leader/follower
	// .replication.throttled.replicas (throttle.go).
	leaderThrottled, followerThrottled atomic.Bool

	mu struct {
		sync.RWMutex
		leader         int32
		leaderEpoch    int32
		partitionEpoch int32
		replicas       []int32
		isr            []int32
		cfg            config.TopicConfig
		// followerLEO is each follower's log end offset as its fetches
		// report it; a follower absent from it is unknown (a new leader
		// knows nobody's).
		followerLEO map[int32]int64
		// followers is the leader's view of each follower's progress,
		// for the ISR decisions.
		followers map[int32]*followerState
		// epochStartOffset is the log end offset when this broker became
		// leader in its current epoch: a follower must reach it to join
		// the ISR.
		epochStartOffset int64
		// pendingISR is set while an ISR change based on partition epoch
		// pendingEpoch is in flight or awaiting the image.
		pendingISR   bool
		pendingEpoch int32
		// expanding holds followers proposed for the ISR whose outcome is
		// not yet known here (Kafka's maximal ISR, KIP-497): the
		// controller may already have committed them, and may then elect
		// one of them, so the high watermark must count them from the
		// moment they are proposed. Cleared when the image brings a new
		// partition epoch or the controller definitely refuses.
		expanding []int32
	}

	hooks *hooks

	// highWatermark is the offset below which records are committed: the
	// minimum log end offset over the ISR. It only moves forward.
	highWatermark atomic.Int64
}

// followerState is what a leader knows of one follower (Kafka's Replica).
type followerState struct {
	lastCaughtUp time.Time // last time the follower had fetched up to the leader's end
	// The previous fetch: when, and the leader's log end offset then.
	lastFetch    time.Time
	lastFetchLEO int64
}

// hooks are the manager's callbacks, shared by its partitions.
type hooks struct {
	onHighWatermark func(TopicPartition)
	onLogAppend     func(TopicPartition)
	onRoleChange    func(TopicPartition)
	onUnreachable   func(leader int32, refused bool)
	onReachable     func(leader int32)
	// remote serves reads below the local log start (remote.go).
	remote atomic.Pointer[RemoteLog]
}

func (h *hooks) leaderUnreachable(leader int32, refused bool) {
	if h != nil && h.onUnreachable != nil {
		h.onUnreachable(leader, refused)
	}
}

func (h *hooks) leaderReachable(leader int32) {
	if h != nil && h.onReachable != nil {
		h.onReachable(leader)
	}
}

func (h *hooks) highWatermark(tp TopicPartition) {
	if h != nil && h.onHighWatermark != nil {
		h.onHighWatermark(tp)
	}
}

func (h *hooks) logAppend(tp TopicPartition) {
	if h != nil && h.onLogAppend != nil {
		h.onLogAppend(tp)
	}
}

func (h *hooks) roleChange(tp TopicPartition) {
	if h != nil && h.onRoleChange != nil {
		h.onRoleChange(tp)
	}
}

// State is a consistent copy of the partition's role fields.
type State struct {
	Leader         int32
	LeaderEpoch    int32
	PartitionEpoch int32
	Replicas, ISR  []int32
	Config         config.TopicConfig
}

// State returns the partition's current role.
func (p *Partition) State() State {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return State{
		Leader:         p.mu.leader,
		LeaderEpoch:    p.mu.leaderEpoch,
		PartitionEpoch: p.mu.partitionEpoch,
		Replicas:       p.mu.replicas,
		ISR:            p.mu.isr,
		Config:         p.mu.cfg,
	}
}

// IsLeader reports whether this broker leads the partition.
func (p *Partition) IsLeader() bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.mu.leader == p.nodeID
}

// Epochs is the part of a partition's role that decides how a read is
// answered: who leads, in which leader epoch, and the partition epoch
// (moved by every replica set or ISR change).
type Epochs struct {
	Leader, LeaderEpoch, PartitionEpoch int32
}

// Epochs returns the partition's current Epochs, without copying the
// rest of its state: a parked fetch compares them to learn cheaply that
// nothing it read has changed.
func (p *Partition) Epochs() Epochs {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return Epochs{Leader: p.mu.leader, LeaderEpoch: p.mu.leaderEpoch, PartitionEpoch: p.mu.partitionEpoch}
}

// HighWatermark returns the high watermark.
func (p *Partition) HighWatermark() int64 { return p.highWatermark.Load() }

// LogEndOffset returns the local log end offset.
func (p *Partition) LogEndOffset() int64 { return p.log.LogEndOffset() }

// LogStartOffset returns the log start offset: the remote log's when the
// partition has remote storage that starts earlier (remote.go), else the
// local one.
func (p *Partition) LogStartOffset() int64 {
	local := p.log.LogStartOffset()
	if r := p.remoteLog(); r != nil {
		if s, ok := r.LogStartOffset(p.TP, p.TopicID); ok && s < local {
			return s
		}
	}
	return local
}

// Log exposes the partition's log for reads that need it directly.
func (p *Partition) Log() *storage.Log { return p.log }

// maybeAdvanceHighWatermark raises the high watermark to what the ISR's
// log end offsets allow (see HighWatermark) and reports whether it moved.
func (p *Partition) maybeAdvanceHighWatermark() bool {
	p.mu.RLock()
	isr := p.mu.isr
	if len(p.mu.expanding) > 0 {
		isr = append(slices.Clone(isr), p.mu.expanding...)
	}
	target := HighWatermark(p.durableEndOffsetRLocked(), p.nodeID, isr, p.mu.followerLEO,
		EffectiveMinISR(p.mu.cfg.MinInsyncReplicas, len(p.mu.replicas)))
	p.mu.RUnlock()
	for {
		cur := p.highWatermark.Load()
		if target <= cur {
			return false
		}
		if p.highWatermark.CompareAndSwap(cur, target) {
			p.log.SetHighWatermarkCheckpoint(target)
			return true
		}
	}
}

// CheckLeaderEpoch compares a client's idea of the leader epoch (-1 = no
// opinion) with ours, as Kafka's fetch and list-offsets paths do.
func (p *Partition) CheckLeaderEpoch(current int32) error {
	if current < 0 {
		return nil
	}
	p.mu.RLock()
	ours := p.mu.leaderEpoch
	p.mu.RUnlock()
	switch {
	case current < ours:
		return ErrFencedLeaderEpoch
	case current > ours:
		return ErrUnknownLeaderEpoch
	}
	return nil
}

// AppendResult is the outcome of a leader append.
type AppendResult struct {
	storage.AppendResult
	// HighWatermarkMoved is set when the append raised the high watermark,
	// so the caller wakes waiting fetches and produces.
	HighWatermarkMoved bool
}

// AppendAsLeader validates and appends one client batch. The checks run
// in Kafka's order: leadership, then for acks=all the ISR size against the
// effective min.insync.replicas (before anything is written), then the
// storage append, which validates the batch and its records, recompresses
// it when the topic's compression.type asks, and assigns offsets under
// the log's lock.
func (p *Partition) AppendAsLeader(b record.Batch, requiredAcks int16) (AppendResult, error) {
	// The read lock is held across the append so that a role change
	// (update, exclusive) cannot interleave: a batch is appended only
	// while this broker leads in epoch.
	p.mu.RLock()
	res, err := p.appendAsLeaderRLocked(b, requiredAcks)
	p.mu.RUnlock()
	if err != nil {
		return AppendResult{}, err
	}
	if p.durable() {
		// Group commit; see durable.go. A duplicate is synced too: its
		// first write may not have been yet.
		if err := p.log.SyncTo(res.LastOffset + 1); err != nil {
			return AppendResult{}, err
		}
	}
	out := AppendResult{AppendResult: res}
	if !res.Duplicate {
		out.HighWatermarkMoved = p.maybeAdvanceHighWatermark()
		p.hooks.logAppend(p.TP)
		if out.HighWatermarkMoved {
			p.hooks.highWatermark(p.TP)
		}
	}
	return out, nil
}

func (p *Partition) appendAsLeaderRLocked(b record.Batch, requiredAcks int16) (storage.AppendResult, error) {
	leader, epoch, isr, replicas, cfg := p.mu.leader, p.mu.leaderEpoch, len(p.mu.isr), len(p.mu.replicas), p.mu.cfg
	if leader != p.nodeID {
		return storage.AppendResult{}, ErrNotLeader
	}
	if requiredAcks == -1 && isr < EffectiveMinISR(cfg.MinInsyncReplicas, replicas) {
		return storage.AppendResult{}, fmt.Errorf("%w: isr %d, min.insync.replicas %d", ErrNotEnoughReplicas, isr, cfg.MinInsyncReplicas)
	}
	// The log validates the batch (header, CRC, size, every record,
	// timestamps), recompresses it if the topic asks for another codec,
	// and assigns offsets.
	return p.log.AppendAsLeader(b, storage.AppendOptions{LeaderEpoch: epoch, LogAppendTimeMs: -1})
}

// FetchResult is what a read of the partition returns.
type FetchResult struct {
	Records        []byte
	HighWatermark  int64
	LogStartOffset int64
}

// Read returns batches from offset up to the high watermark.
func (p *Partition) Read(offset int64, maxBytes int, minOneBatch bool) (FetchResult, error) {
	return p.ReadPooled(offset, maxBytes, minOneBatch, nil)
}

// ReadPooled is Read into pooled buffers recorded in bufs: the records
// are valid until bufs.Release (storage.ReadBuffers).
func (p *Partition) ReadPooled(offset int64, maxBytes int, minOneBatch bool, bufs *storage.ReadBuffers) (FetchResult, error) {
	if !p.IsLeader() {
		return FetchResult{}, ErrNotLeader
	}
	hw := p.HighWatermark()
	if r := p.remoteLog(); r != nil && offset < p.log.LogStartOffset() {
		return p.readRemote(r, offset, maxBytes, minOneBatch, hw)
	}
	recs, err := p.log.ReadPooled(offset, maxBytes, hw, minOneBatch, bufs)
	if err != nil {
		return FetchResult{}, err
	}
	return FetchResult{Records: recs, HighWatermark: hw, LogStartOffset: p.LogStartOffset()}, nil
}

// roleChange says what an update changed.
type roleChange struct {
	leaderOrEpoch bool // the leader or the leader epoch changed
	becameLeader  bool
	hwMoved       bool
}

// update applies a new role from the metadata image. Becoming leader (or
// a new leader epoch as leader) resets the follower tracking: every
// follower's log end offset is unknown and each gets the full
// replica.lag.time.max.ms from now; the high watermark starts at
// max(checkpoint, current) and never moves back.
func (p *Partition) update(leader, leaderEpoch, partitionEpoch int32, replicas, isr []int32, cfg config.TopicConfig, now time.Time) roleChange {
	p.mu.Lock()
	var rc roleChange
	rc.leaderOrEpoch = p.mu.leader != leader || p.mu.leaderEpoch != leaderEpoch
	if partitionEpoch != p.mu.partitionEpoch || rc.leaderOrEpoch {
		p.mu.pendingISR = false
		p.mu.expanding = nil
	}
	p.mu.leader = leader
	p.mu.leaderEpoch = leaderEpoch
	p.mu.partitionEpoch = partitionEpoch
	p.mu.replicas = slices.Clone(replicas)
	p.mu.isr = slices.Clone(isr)
	p.mu.cfg = cfg
	if leader == p.nodeID && rc.leaderOrEpoch {
		rc.becameLeader = true
		p.mu.followerLEO = make(map[int32]int64)
		p.mu.followers = make(map[int32]*followerState)
		for _, id := range replicas {
			if id != p.nodeID {
				p.mu.followers[id] = &followerState{lastCaughtUp: now, lastFetchLEO: -1}
			}
		}
		p.mu.epochStartOffset = p.log.LogEndOffset()
		if cp := p.log.HighWatermarkCheckpoint(); cp > p.highWatermark.Load() {
			p.highWatermark.Store(cp)
		}
	}
	if leader == p.nodeID {
		// Replicas added by a reassignment get tracking too.
		for _, id := range replicas {
			if _, ok := p.mu.followers[id]; !ok && id != p.nodeID {
				p.mu.followers[id] = &followerState{lastCaughtUp: now, lastFetchLEO: -1}
			}
		}
	}
	p.mu.Unlock()
	if leader == p.nodeID {
		rc.hwMoved = p.maybeAdvanceHighWatermark()
	}
	return rc
}

// DeleteRecordsBefore moves the log start offset up to offset (-1: the
// high watermark), as the DeleteRecords API asks. Offsets above the high
// watermark are out of range: uncommitted records cannot be deleted.
func (p *Partition) DeleteRecordsBefore(offset int64) (int64, error) {
	if !p.IsLeader() {
		return -1, ErrNotLeader
	}
	hw := p.HighWatermark()
	if offset == -1 {
		offset = hw
	}
	if offset < 0 || offset > hw {
		return -1, fmt.Errorf("%w: delete records before %d, high watermark %d", storage.ErrOffsetOutOfRange, offset, hw)
	}
	return p.log.DeleteRecordsBefore(offset)
}
