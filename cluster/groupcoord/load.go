package groupcoord

// Loading a __consumer_offsets partition when this broker becomes its
// leader: the log is read without the coordinator's lock, and the groups
// are installed under it only if the partition is still led in the same
// term (token) when the read ends.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/coordinator"
	"github.com/kbroker/kbroker/cluster/group"
	"github.com/kbroker/kbroker/storage"
	"github.com/kbroker/kbroker/wire/record"
)

// loadedPartition is what a partition's log says: the latest offsets and
// metadata record of every group (a tombstone deletes), and the
// transactional offsets whose transaction has no marker yet, by producer
// id (txn_offsets.go).
type loadedPartition struct {
	offsets map[string]map[group.TopicPartition]group.Offset
	metas   map[string]*kmsg.GroupMetadataValue
	// consumers are the consumer (KIP-848) groups.
	consumers map[string]*group.ConsumerSnapshot
	txn       map[int64]map[string]map[group.TopicPartition]group.Offset
	records   int
}

// load reads partition p and installs its groups if p is still led under
// token when done.
func (c *Coordinator) load(ctx context.Context, p int32, part coordinator.OffsetsReplica, token uint64) {
	start := time.Now()
	lp, err := c.readPartition(ctx, p, part)
	if err != nil {
		c.logger.Error("loading __consumer_offsets", "partition", p, "err", err)
		return
	}
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.mu.Parts[p]
	if c.mu.closed || !ok || st.Token != token || ctx.Err() != nil {
		return
	}
	ids := map[string]bool{}
	for id := range lp.offsets {
		ids[id] = true
	}
	for id := range lp.metas {
		ids[id] = true
	}
	for id := range lp.consumers {
		ids[id] = true
	}
	for _, byGroup := range lp.txn {
		for id := range byGroup {
			ids[id] = true
		}
	}
	for id := range ids {
		if snap := lp.consumers[id]; snap != nil {
			c.mu.groups[id] = group.RestoreConsumer(id, snap, lp.offsets[id], c.cfg.Consumer, now)
			continue
		}
		if len(lp.offsets[id]) == 0 && lp.metas[id] == nil {
			continue
		}
		c.mu.groups[id] = group.Restore(id, lp.metas[id], lp.offsets[id], c.cfg.InitialRebalanceDelay, now)
	}
	for pid, byGroup := range lp.txn {
		for id, offsets := range byGroup {
			if c.mu.groups[id] == nil {
				c.mu.groups[id] = group.Restore(id, nil, nil, c.cfg.InitialRebalanceDelay, now)
			}
			c.addPendingLocked(pid, id, offsets)
		}
	}
	st.Loading = false
	c.logger.Info("loaded __consumer_offsets partition", "partition", p, "groups", len(ids), "records", lp.records, "took", time.Since(start))
}

// readPartition reads part from its log start to its log end, as it is
// when the read starts, until ctx ends.
func (c *Coordinator) readPartition(ctx context.Context, p int32, part coordinator.OffsetsReplica) (*loadedPartition, error) {
	lp := &loadedPartition{
		offsets:   map[string]map[group.TopicPartition]group.Offset{},
		metas:     map[string]*kmsg.GroupMetadataValue{},
		consumers: map[string]*group.ConsumerSnapshot{},
		txn:       map[int64]map[string]map[group.TopicPartition]group.Offset{},
	}
	off, end := part.LogStartOffset(), part.LogEndOffset()
	for off < end && ctx.Err() == nil {
		data, err := part.ReadLog(off, offsetsLoadBufferSize, end)
		if err != nil {
			if errors.Is(err, storage.ErrOffsetOutOfRange) && off < part.LogStartOffset() {
				// Retention or the cleaner moved the log start on.
				off = part.LogStartOffset()
				continue
			}
			return nil, fmt.Errorf("reading at offset %d: %w", off, err)
		}
		if len(data) == 0 {
			break
		}
		for len(data) > 0 {
			b, rest, err := record.Parse(data)
			if err != nil {
				break
			}
			data = rest
			off = b.LastOffset() + 1
			if b.IsControl() {
				lp.settle(b)
				continue
			}
			pid := int64(-1)
			if b.IsTransactional() {
				pid = b.ProducerID()
			}
			if err := record.IterateCompacted(b, 64<<20, func(r *record.Record) error {
				lp.apply(c, p, r, pid)
				return nil
			}); err != nil {
				c.logger.Warn("skipping unreadable __consumer_offsets batch", "partition", p, "offset", b.BaseOffset(), "err", err)
			}
		}
	}
	return lp, nil
}

// settle applies a transaction marker to the transactional offsets read
// so far: COMMIT makes them the groups' offsets, ABORT drops them.
func (lp *loadedPartition) settle(b record.Batch) {
	m, ok, err := record.ParseControl(b)
	pending := lp.txn[b.ProducerID()]
	if err != nil || !ok || pending == nil || (m.Type != record.ControlCommit && m.Type != record.ControlAbort) {
		return
	}
	delete(lp.txn, b.ProducerID())
	if m.Type != record.ControlCommit {
		return
	}
	for id, offsets := range pending {
		if lp.offsets[id] == nil {
			lp.offsets[id] = map[group.TopicPartition]group.Offset{}
		}
		for tp, o := range offsets {
			lp.offsets[id][tp] = o
		}
	}
}

// apply folds one record of partition p into lp; pid is the producer of a
// transactional batch (-1 otherwise), whose offsets wait for its marker.
func (lp *loadedPartition) apply(c *Coordinator, p int32, r *record.Record, pid int64) {
	key := append([]byte(nil), r.Key...)
	var value []byte
	if r.Value != nil {
		value = append([]byte{}, r.Value...)
	}
	e, err := group.Decode(key, value)
	if err != nil {
		c.logger.Debug("skipping __consumer_offsets record", "partition", p, "err", err)
		return
	}
	lp.records++
	switch {
	case e.Consumer != nil:
		lp.applyConsumer(c, p, e.Consumer)
	case e.IsOffset && e.Tombstone:
		delete(lp.offsets[e.Group], e.TP)
	case e.IsOffset && pid >= 0:
		if lp.txn[pid] == nil {
			lp.txn[pid] = map[string]map[group.TopicPartition]group.Offset{}
		}
		if lp.txn[pid][e.Group] == nil {
			lp.txn[pid][e.Group] = map[group.TopicPartition]group.Offset{}
		}
		lp.txn[pid][e.Group][e.TP] = e.Offset
	case e.IsOffset:
		if lp.offsets[e.Group] == nil {
			lp.offsets[e.Group] = map[group.TopicPartition]group.Offset{}
		}
		lp.offsets[e.Group][e.TP] = e.Offset
	case e.Tombstone:
		delete(lp.metas, e.Group)
		// Kafka writes offset tombstones with a group's; a group
		// tombstone on its own leaves offsets alone.
	default:
		md := e.Metadata
		lp.metas[e.Group] = &md
		// The group is classic from here on (converted back).
		delete(lp.consumers, e.Group)
	}
}

// applyConsumer folds a consumer group record into lp: the group exists
// from its first record until its ConsumerGroupMetadata tombstone.
func (lp *loadedPartition) applyConsumer(c *Coordinator, p int32, rec *group.ConsumerRecord) {
	if rec.IsGroupTombstone() {
		delete(lp.consumers, rec.Group)
		return
	}
	snap := lp.consumers[rec.Group]
	if snap == nil {
		if rec.Tombstone {
			return
		}
		snap = group.NewConsumerSnapshot()
		lp.consumers[rec.Group] = snap
		delete(lp.metas, rec.Group)
	}
	if err := snap.Apply(rec); err != nil {
		c.logger.Warn("skipping unreadable consumer group record", "partition", p, "group", rec.Group, "err", err)
	}
}
