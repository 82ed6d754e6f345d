package txncoord

// Loading a __transaction_state partition when this broker becomes its
// leader: the latest record of every transactional id wins (a tombstone
// removes it); transactions caught in PrepareCommit or PrepareAbort get
// their markers written again, as Kafka's TransactionStateManager does.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kbroker/kbroker/cluster/coordinator"
	"github.com/kbroker/kbroker/cluster/txn"
	"github.com/kbroker/kbroker/internal/wallclock"
	"github.com/kbroker/kbroker/storage"
	"github.com/kbroker/kbroker/wire/record"
)

func (c *Coordinator) load(ctx context.Context, p int32, part coordinator.OffsetsReplica, token uint64) {
	start := time.Now()
	loaded, err := c.readPartition(ctx, p, part)
	if err != nil {
		c.logger.Error("loading "+StateTopic, "partition", p, "err", err)
		return
	}
	c.mu.Lock()
	st, ok := c.mu.Parts[p]
	if c.mu.closed || !ok || st.Token != token || ctx.Err() != nil {
		c.mu.Unlock()
		return
	}
	prepared := 0
	for id, m := range loaded {
		c.mu.txns[id] = &txnEntry{meta: m}
		if m.State == txn.PrepareCommit || m.State == txn.PrepareAbort {
			c.addMarkerJobLocked(id, m)
			prepared++
		}
	}
	st.Loading = false
	c.mu.Unlock()
	if prepared > 0 {
		coordinator.Wake(c.markerKick)
	}
	c.logger.Info("loaded "+StateTopic+" partition", "partition", p, "transactional.ids", len(loaded), "completing", prepared, "took", time.Since(start))
}

func (c *Coordinator) readPartition(ctx context.Context, p int32, part coordinator.OffsetsReplica) (map[string]*txn.Metadata, error) {
	out := map[string]*txn.Metadata{}
	off, end := part.LogStartOffset(), part.LogEndOffset()
	for off < end && ctx.Err() == nil {
		data, err := part.ReadLog(off, stateLoadBufferSize, end)
		if err != nil {
			if errors.Is(err, storage.ErrOffsetOutOfRange) && off < part.LogStartOffset() {
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
				continue
			}
			if err := record.IterateCompacted(b, 64<<20, func(r *record.Record) error {
				var value []byte
				if r.Value != nil {
					value = r.Value
				}
				id, m, err := txn.Decode(r.Key, value)
				switch {
				case err != nil:
					c.logger.Debug("skipping "+StateTopic+" record", "partition", p, "err", err)
				case m == nil:
					delete(out, id)
				default:
					unstamp(m, time.Now(), wallclock.Now())
					out[id] = m
				}
				return nil
			}); err != nil {
				c.logger.Warn("skipping unreadable "+StateTopic+" batch", "partition", p, "offset", b.BaseOffset(), "err", err)
			}
		}
	}
	return out, nil
}
