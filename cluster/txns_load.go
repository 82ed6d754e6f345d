package cluster

// Loading a __transaction_state partition when this broker becomes its
// leader: the latest record of every transactional id wins (a tombstone
// removes it); transactions caught in PrepareCommit or PrepareAbort get
// their markers written again, as Kafka's TransactionStateManager does.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kbroker/kbroker/cluster/txn"
	"github.com/kbroker/kbroker/storage"
	"github.com/kbroker/kbroker/wire/record"
)

func (c *txnCoordinator) load(ctx context.Context, p int32, part offsetsReplica, token uint64) {
	start := time.Now()
	loaded, err := c.readPartition(ctx, p, part)
	if err != nil {
		c.logger.Error("loading "+txnStateTopic, "partition", p, "err", err)
		return
	}
	c.mu.Lock()
	st, ok := c.mu.parts[p]
	if c.mu.closed || !ok || st.token != token || ctx.Err() != nil {
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
	st.loading = false
	c.mu.Unlock()
	if prepared > 0 {
		wake(c.markerKick)
	}
	c.logger.Info("loaded "+txnStateTopic+" partition", "partition", p, "transactional.ids", len(loaded), "completing", prepared, "took", time.Since(start))
}

func (c *txnCoordinator) readPartition(ctx context.Context, p int32, part offsetsReplica) (map[string]*txn.Metadata, error) {
	out := map[string]*txn.Metadata{}
	off, end := part.LogStartOffset(), part.LogEndOffset()
	for off < end && ctx.Err() == nil {
		data, err := part.ReadLog(off, offsetsLoadBufferSize, end)
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
					c.logger.Debug("skipping "+txnStateTopic+" record", "partition", p, "err", err)
				case m == nil:
					delete(out, id)
				default:
					out[id] = m
				}
				return nil
			}); err != nil {
				c.logger.Warn("skipping unreadable "+txnStateTopic+" batch", "partition", p, "offset", b.BaseOffset(), "err", err)
			}
		}
	}
	return out, nil
}
