package replication

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/storage"
)

// recordFollowerFetch updates a follower's log end offset and catch-up
// time after a fetch at fetchOffset while the leader's log ended at
// leaderLEO. It reports whether the follower should be proposed for the
// ISR.
func (p *Partition) recordFollowerFetch(replicaID int32, fetchOffset, leaderLEO int64, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	// The role may have changed since the fetch was checked: a replica
	// reassigned away must not be counted again.
	if p.mu.leader != p.nodeID || !slices.Contains(p.mu.replicas, replicaID) {
		return false
	}
	p.mu.followerLEO[replicaID] = fetchOffset
	st, ok := p.mu.followers[replicaID]
	if !ok {
		st = &followerState{lastFetchLEO: -1}
		p.mu.followers[replicaID] = st
	}
	st.lastCaughtUp = CaughtUpTime(st.lastCaughtUp, fetchOffset, leaderLEO, now, st.lastFetch, st.lastFetchLEO)
	st.lastFetch, st.lastFetchLEO = now, leaderLEO
	return !slices.Contains(p.mu.isr, replicaID) && !p.mu.pendingISR &&
		CanJoinISR(fetchOffset, p.highWatermark.Load(), p.mu.epochStartOffset)
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch for a partition this
// broker leads: after checking currentLeaderEpoch (-1 = no check) as
// fetches do, the largest epoch <= leaderEpoch the log knows and the end
// offset of that epoch (the start of the next one, or the log end offset
// for the current epoch). An epoch the log cannot place gives
// (-1, -1) and no error, as in Kafka.
func (m *Manager) EndOffsetForEpoch(tp TopicPartition, currentLeaderEpoch, leaderEpoch int32) (epoch int32, endOffset int64, err error) {
	p, err := m.LeaderPartition(tp)
	if err != nil {
		return storage.UndefinedEpoch, storage.UndefinedEpochOffset, err
	}
	if err := p.CheckLeaderEpoch(currentLeaderEpoch); err != nil {
		return storage.UndefinedEpoch, storage.UndefinedEpochOffset, err
	}
	return p.endOffsetForEpoch(leaderEpoch)
}

// endOffsetForEpoch is the log's EndOffsetForEpoch as if the current
// leader epoch had been recorded in the epoch cache at the start of this
// leadership (Kafka assigns it when the broker becomes leader; our
// storage records an epoch with the first batch written in it). Until
// then the log end offset is the current epoch's start offset.
func (p *Partition) endOffsetForEpoch(requested int32) (int32, int64, error) {
	p.mu.RLock()
	current, leader := p.mu.leaderEpoch, p.mu.leader
	// Read under the lock: no leader append can interleave (they hold
	// it shared too, but the role cannot change under us).
	latest, ok := p.log.LatestEpoch()
	leo := p.log.LogEndOffset()
	end, found := p.log.EndOffsetForEpoch(requested)
	p.mu.RUnlock()
	if leader != p.nodeID {
		return storage.UndefinedEpoch, storage.UndefinedEpochOffset, ErrNotLeader
	}
	if !ok || latest < current {
		switch {
		case requested == current:
			return current, leo, nil
		case ok && requested > latest && requested < current:
			return latest, leo, nil
		}
	}
	return found, end, nil
}

// proposeISRExpand proposes adding replicaID to the ISR, asynchronously.
func (m *Manager) proposeISRExpand(p *Partition, replicaID int32) {
	// The controller refuses a fenced broker (KIP-841); asking would only
	// repeat the refusal until the broker's heartbeat unfences it.
	m.mu.RLock()
	img := m.mu.image
	m.mu.RUnlock()
	if img != nil {
		if b, ok := img.Brokers[replicaID]; !ok || b.Fenced {
			return
		}
	}
	p.mu.Lock()
	if p.mu.pendingISR || slices.Contains(p.mu.isr, replicaID) || p.mu.leader != p.nodeID {
		p.mu.Unlock()
		return
	}
	c := p.changeLocked(append(slices.Clone(p.mu.isr), replicaID))
	if !slices.Contains(p.mu.expanding, replicaID) {
		p.mu.expanding = append(p.mu.expanding, replicaID)
	}
	p.mu.Unlock()
	m.proposeISR(p, c)
}

// changeLocked is an ISR change of p based on its current epochs; it
// marks the change in flight.
func (p *Partition) changeLocked(isr []int32) metadata.PartitionChange {
	p.mu.pendingISR = true
	p.mu.pendingEpoch = p.mu.partitionEpoch
	return metadata.PartitionChange{
		Topic:          p.TP.Topic,
		Partition:      p.TP.Partition,
		Leader:         p.nodeID,
		ISR:            isr,
		LeaderEpoch:    p.mu.leaderEpoch,
		PartitionEpoch: p.mu.partitionEpoch,
	}
}

// isrProposalTimeout bounds one ISR proposal (or one AlterPartition
// request): while a proposal is pending no other is made for the
// partition, and a controller that died mid-request must not hold the ISR
// back for long.
const isrProposalTimeout = 5 * time.Second

// proposeISR sends c to the ISRChanger: queued for the next AlterPartition
// request when it batches (alter_partition.go), else in a goroutine owned
// by Run. The change stays pending until the image applies it (update
// clears the flag on a new partition epoch); a failure clears it at once
// so the next fetch or shrink check may try again.
func (m *Manager) proposeISR(p *Partition, c metadata.PartitionChange) {
	p.mu.RLock()
	prevISR := len(p.mu.isr)
	p.mu.RUnlock()
	done := func(err error) {
		if err == nil {
			if len(c.ISR) < prevISR {
				m.isrShrinks.Add(1)
			} else {
				m.isrExpands.Add(1)
			}
			return
		}
		// Definitely not committed when refused: stop counting the
		// proposed followers. After a timeout or a lost controller the
		// outcome is unknown, so they keep counting until the image says.
		refused := errors.Is(err, metadata.ErrInvalidPartitionChange) || errors.Is(err, errNotProposed)
		p.mu.Lock()
		if p.mu.pendingISR && p.mu.pendingEpoch == c.PartitionEpoch {
			p.mu.pendingISR = false
			if refused {
				p.mu.expanding = nil
			}
		}
		p.mu.Unlock()
	}
	if b, ok := m.cfg.ISR.(ISRBatcher); ok {
		m.queueISRChange(b, c, done)
		return
	}
	if m.cfg.ISR == nil {
		done(errNotProposed)
		return
	}
	started := m.spawn(func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, isrProposalTimeout)
		defer cancel()
		err := m.cfg.ISR.ChangePartition(ctx, c)
		m.logISRChange(c, err)
		done(err)
	})
	if !started {
		done(errNotProposed)
	}
}

// logISRChange logs a proposal the controller did not apply.
func (m *Manager) logISRChange(c metadata.PartitionChange, err error) {
	if err != nil && !errors.Is(err, context.Canceled) {
		m.cfg.Logger.Info("ISR change not applied", "topic", c.Topic, "partition", c.Partition,
			"isr", c.ISR, "partition_epoch", c.PartitionEpoch, "err", err)
	}
}

// shrinkISRs proposes removing the lagging followers of every partition
// this broker leads.
func (m *Manager) shrinkISRs(now time.Time) {
	for _, p := range m.Partitions() {
		p.mu.Lock()
		if p.mu.leader != p.nodeID || p.mu.pendingISR {
			p.mu.Unlock()
			continue
		}
		caught := make(map[int32]time.Time, len(p.mu.followers))
		for id, st := range p.mu.followers {
			caught[id] = st.lastCaughtUp
		}
		lag := LaggingReplicas(p.nodeID, p.mu.isr, caught, now, m.cfg.ReplicaLagTimeMax)
		if len(lag) == 0 {
			p.mu.Unlock()
			continue
		}
		isr := slices.DeleteFunc(slices.Clone(p.mu.isr), func(id int32) bool { return slices.Contains(lag, id) })
		c := p.changeLocked(isr)
		p.mu.Unlock()
		p.logger.Info("shrinking ISR", "lagging", lag, "isr", isr)
		m.proposeISR(p, c)
	}
}

// runISRChecker proposes ISR shrinks every replica.lag.time.max.ms / 2
// until ctx ends (Kafka's isr-expiration task).
func (m *Manager) runISRChecker(ctx context.Context) {
	t := time.NewTicker(max(m.cfg.ReplicaLagTimeMax/2, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			m.shrinkISRs(now)
		}
	}
}

// ISRChanges returns how many ISR shrinks and expands this broker, as a
// partition leader, has had committed by the controller.
func (m *Manager) ISRChanges() (shrinks, expands uint64) {
	return m.isrShrinks.Load(), m.isrExpands.Load()
}
