package sharecoord

// The share-partition states of the __share_group_state partitions this
// broker leads (Kafka's ShareCoordinatorShard): one snapshot per
// share-partition, the latest record of its key, read at load and
// replaced by each write once the write is committed (acks=all).

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/cluster/coordinator"
	"github.com/kbroker/kbroker/cluster/share"
	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/storage"
	"github.com/kbroker/kbroker/wire/record"
)

// state is one share-partition's persisted state and the leader epoch
// of the partition leader that last read or wrote it: writes of an
// older leader are fenced.
type state struct {
	snap        share.Snapshot
	leaderEpoch int32
}

// Summary is ReadShareGroupStateSummary's answer for one share-partition.
type Summary struct {
	StateEpoch, LeaderEpoch int32
	StartOffset             int64
	// DeliveryComplete counts the records past the start offset that are
	// acknowledged or archived (Kafka's DeliveryCompleteCount): the lag
	// is the high watermark less the start offset less these.
	DeliveryComplete int32
}

// StateKeyString is Kafka's share coordinator key, group:topicId:partition
// with the topic id as Kafka prints a Uuid (URL-safe base64 without
// padding): it picks the key's partition of __share_group_state.
func StateKeyString(k share.StateKey) string {
	return k.Group + ":" + base64.RawURLEncoding.EncodeToString(k.TopicID[:]) + ":" + strconv.Itoa(int(k.Partition))
}

// stateLocked is k's state, or the Kafka error its request gets: this
// broker does not lead k's partition, or is still loading it.
func (c *Coordinator) stateLocked(k share.StateKey) (*state, error) {
	if c.mu.closed {
		return nil, kerr.NotCoordinator
	}
	st, ok := c.mu.Parts[c.PartitionFor(k)]
	switch {
	case !ok:
		return nil, kerr.NotCoordinator
	case st.Loading:
		return nil, kerr.CoordinatorLoadInProgress
	}
	return c.mu.states[k], nil
}

// ReadState answers ReadShareGroupState: k's state, and a leader epoch
// higher than the recorded one is recorded (written), so the previous
// leader's writes are fenced from then on. A share-partition without
// state is UNKNOWN_TOPIC_OR_PARTITION.
func (c *Coordinator) ReadState(ctx context.Context, k share.StateKey, leaderEpoch int32) (share.Snapshot, error) {
	var out share.Snapshot
	err := c.update(ctx, k, func(cur *state) (*state, error) {
		if cur == nil {
			return nil, fmt.Errorf("%w: no state for %s", kerr.UnknownTopicOrPartition, StateKeyString(k))
		}
		out = cur.snap
		if leaderEpoch <= cur.leaderEpoch {
			return cur, errUnchanged
		}
		return &state{snap: cur.snap, leaderEpoch: leaderEpoch}, nil
	})
	return out, err
}

// WriteState answers WriteShareGroupState: the batches written replace
// the ones they overlap, those below the new start offset go, as in
// Kafka's ShareCoordinatorShard. An older state epoch is
// FENCED_STATE_EPOCH, an older leader epoch FENCED_LEADER_EPOCH.
func (c *Coordinator) WriteState(ctx context.Context, k share.StateKey, leaderEpoch int32, s share.Snapshot) error {
	return c.update(ctx, k, func(cur *state) (*state, error) {
		if cur == nil {
			return &state{snap: s, leaderEpoch: leaderEpoch}, nil
		}
		switch {
		case s.StateEpoch < cur.snap.StateEpoch:
			return nil, fmt.Errorf("%w: state epoch %d, current %d", kerr.FencedStateEpoch, s.StateEpoch, cur.snap.StateEpoch)
		case leaderEpoch < cur.leaderEpoch:
			return nil, fmt.Errorf("%w: leader epoch %d, current %d", kerr.FencedLeaderEpoch, leaderEpoch, cur.leaderEpoch)
		}
		return &state{snap: Merge(cur.snap, s), leaderEpoch: leaderEpoch}, nil
	})
}

// InitializeState answers InitializeShareGroupState: k starts over at
// startOffset with nothing in flight, at stateEpoch, which must be
// newer than the current one (FENCED_STATE_EPOCH).
func (c *Coordinator) InitializeState(ctx context.Context, k share.StateKey, stateEpoch int32, startOffset int64) error {
	return c.update(ctx, k, func(cur *state) (*state, error) {
		next := &state{snap: share.Snapshot{StateEpoch: stateEpoch, StartOffset: startOffset, Batches: []share.StateBatch{}}}
		if cur != nil {
			if stateEpoch <= cur.snap.StateEpoch {
				return nil, fmt.Errorf("%w: state epoch %d, current %d", kerr.FencedStateEpoch, stateEpoch, cur.snap.StateEpoch)
			}
			next.leaderEpoch = cur.leaderEpoch
		}
		return next, nil
	})
}

// DeleteState answers DeleteShareGroupState: k's state goes (a tombstone).
// Deleting a state that does not exist succeeds.
func (c *Coordinator) DeleteState(ctx context.Context, k share.StateKey) error {
	return c.update(ctx, k, func(cur *state) (*state, error) {
		if cur == nil {
			return nil, errUnchanged
		}
		return nil, nil
	})
}

// SummaryState answers ReadShareGroupStateSummary.
func (c *Coordinator) SummaryState(k share.StateKey) (Summary, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur, err := c.stateLocked(k)
	if err != nil {
		return Summary{}, err
	}
	if cur == nil {
		return Summary{}, fmt.Errorf("%w: no state for %s", kerr.UnknownTopicOrPartition, StateKeyString(k))
	}
	s := Summary{StateEpoch: cur.snap.StateEpoch, LeaderEpoch: cur.leaderEpoch, StartOffset: cur.snap.StartOffset}
	for _, b := range cur.snap.Batches {
		if b.State == share.Acknowledged || b.State == share.Archived {
			s.DeliveryComplete += int32(min(b.Last-b.First+1, 1<<31-1-int64(s.DeliveryComplete)))
		}
	}
	return s, nil
}

// errUnchanged: an update that writes nothing and succeeds.
var errUnchanged = errors.New("unchanged")

// update applies f to k's state and, unless f declines (errUnchanged) or
// fails, writes its result (a tombstone for nil) and installs it once
// committed. Updates of one state partition run one at a time, so the
// log holds them in the order they were computed.
func (c *Coordinator) update(ctx context.Context, k share.StateKey, f func(cur *state) (*state, error)) error {
	p := c.PartitionFor(k)
	lock := c.partitionLock(p)
	lock.Lock()
	defer lock.Unlock()
	c.mu.Lock()
	cur, err := c.stateLocked(k)
	if err != nil {
		c.mu.Unlock()
		return err
	}
	token := c.mu.Parts[p].Token
	next, err := f(cur)
	c.mu.Unlock()
	if errors.Is(err, errUnchanged) {
		return nil
	}
	if err != nil {
		return err
	}
	rec := record.Record{Key: share.EncodeKey(k)}
	if next != nil {
		rec.Value = share.EncodeSnapshot(next.snap, next.leaderEpoch)
	}
	if err := c.store(ctx, p, rec); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.mu.Parts[p]; c.mu.closed || !ok || st.Token != token {
		// Leadership moved while the write waited: the new leader
		// loads it from the log.
		return kerr.NotCoordinator
	}
	if next == nil {
		delete(c.mu.states, k)
	} else {
		c.mu.states[k] = next
	}
	return nil
}

// store appends rec to partition p with acks=all and waits until the
// high watermark passes it, ctx ends, or writeTimeout passes.
func (c *Coordinator) store(ctx context.Context, p int32, rec record.Record) error {
	part, err := c.host.StateReplica(p)
	if err != nil || !part.IsLeader() {
		return kerr.NotCoordinator
	}
	now := time.Now()
	batch, err := record.Build(record.BatchSpec{
		BaseTimestamp: now.UnixMilli(),
		ProducerID:    -1, ProducerEpoch: -1, BaseSequence: -1,
	}, []record.Record{rec})
	if err != nil {
		return kerr.UnknownServerError
	}
	last, err := part.AppendAsLeader(batch)
	if err != nil {
		return coordinator.StoreError(err)
	}
	done := make(chan error, 1)
	op := &coordinator.DelayedStore{Replica: part, LastOffset: last, Done: func(err error) { done <- err }}
	c.waiters.TryCompleteElseWatch(op, now.Add(writeTimeout), replication.TopicPartition{Topic: StateTopic, Partition: p})
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		// The operation still completes or expires in the purgatory;
		// done is buffered.
		return fmt.Errorf("%w: waiting for the state write: %v", kerr.RequestTimedOut, ctx.Err())
	}
}

// Merge is the state after a write: the written batches replace what they
// overlap, batches below the new start offset go (Kafka's
// ShareCoordinatorShard merge of PersisterStateBatch).
func Merge(cur, w share.Snapshot) share.Snapshot {
	out := share.Snapshot{StateEpoch: w.StateEpoch, StartOffset: w.StartOffset}
	if out.StartOffset < 0 {
		out.StartOffset = cur.StartOffset
	}
	var old []share.StateBatch
	for _, b := range cur.Batches {
		if b.Last < out.StartOffset {
			continue
		}
		b.First = max(b.First, out.StartOffset)
		// Cut out the written ranges.
		pieces := []share.StateBatch{b}
		for _, nb := range w.Batches {
			var next []share.StateBatch
			for _, pc := range pieces {
				if nb.Last < pc.First || nb.First > pc.Last {
					next = append(next, pc)
					continue
				}
				if pc.First < nb.First {
					l := pc
					l.Last = nb.First - 1
					next = append(next, l)
				}
				if pc.Last > nb.Last {
					r := pc
					r.First = nb.Last + 1
					next = append(next, r)
				}
			}
			pieces = next
		}
		old = append(old, pieces...)
	}
	for _, b := range w.Batches {
		if b.Last < out.StartOffset {
			continue
		}
		b.First = max(b.First, out.StartOffset)
		old = append(old, b)
	}
	slices.SortFunc(old, func(a, b share.StateBatch) int { return cmp.Compare(a.First, b.First) })
	out.Batches = old
	if out.Batches == nil {
		out.Batches = []share.StateBatch{}
	}
	return out
}

// load reads state partition p and installs its states if p is still
// led under token when done.
func (c *Coordinator) load(ctx context.Context, p int32, part coordinator.OffsetsReplica, token uint64) {
	start := time.Now()
	states, n, err := c.readPartition(ctx, p, part)
	if err != nil {
		c.logger.Error("loading "+StateTopic, "partition", p, "err", err)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.mu.Parts[p]
	if c.mu.closed || !ok || st.Token != token || ctx.Err() != nil {
		return
	}
	for k, s := range states {
		c.mu.states[k] = s
	}
	st.Loading = false
	c.logger.Info("loaded "+StateTopic+" partition", "partition", p, "states", len(states), "records", n, "took", time.Since(start))
}

// readPartition reads part from its log start to its log end, keeping
// the latest value of each key (a tombstone deletes).
func (c *Coordinator) readPartition(ctx context.Context, p int32, part coordinator.OffsetsReplica) (map[share.StateKey]*state, int, error) {
	states := map[share.StateKey]*state{}
	records := 0
	off, end := part.LogStartOffset(), part.LogEndOffset()
	for off < end && ctx.Err() == nil {
		data, err := part.ReadLog(off, loadBufferSize, end)
		if err != nil {
			if errors.Is(err, storage.ErrOffsetOutOfRange) && off < part.LogStartOffset() {
				off = part.LogStartOffset()
				continue
			}
			return nil, 0, fmt.Errorf("reading at offset %d: %w", off, err)
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
				continue
			}
			if err := record.IterateCompacted(b, 64<<20, func(r *record.Record) error {
				k, err := share.DecodeKey(r.Key)
				if err != nil {
					c.logger.Warn("skipping "+StateTopic+" record", "partition", p, "err", err)
					return nil
				}
				records++
				if r.Value == nil {
					delete(states, k)
					return nil
				}
				s, epoch, err := share.DecodeSnapshot(r.Value)
				if err != nil {
					c.logger.Warn("skipping "+StateTopic+" record", "partition", p, "err", err)
					return nil
				}
				states[k] = &state{snap: s, leaderEpoch: epoch}
				return nil
			}); err != nil {
				c.logger.Warn("skipping unreadable "+StateTopic+" batch", "partition", p, "offset", b.BaseOffset(), "err", err)
			}
		}
	}
	return states, records, nil
}
