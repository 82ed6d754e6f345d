package txncoord

// The coordinator's side of InitProducerId, AddPartitionsToTxn,
// AddOffsetsToTxn and EndTxn, and its own aborts of timed-out
// transactions. Each decision is made by package txn under the lock; the
// resulting state is written without it and applied once replicated.

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/cluster/coordinator"
	"github.com/kbroker/kbroker/cluster/txn"
)

// apply writes next for id, whose entry e the caller marked pending, and
// installs it once replicated; a Prepare state (markers) goes to the
// marker sender. done gets the write's error; it may run on this
// goroutine or on the purgatory's. The caller must not hold c.mu.
func (c *Coordinator) apply(id string, e *txnEntry, next *txn.Metadata, markers bool, done func(error)) {
	c.store(c.PartitionFor(id), id, next, func(err error) {
		c.mu.Lock()
		if c.mu.txns[id] == e {
			e.pending = false
			switch {
			case err == nil && next == nil:
				delete(c.mu.txns, id)
			case err == nil:
				e.meta = next
				if markers {
					c.addMarkerJobLocked(id, next)
				}
			case e.meta == nil:
				// The first write of a new id failed: it never existed.
				delete(c.mu.txns, id)
			}
		}
		c.mu.Unlock()
		if markers && err == nil {
			coordinator.Wake(c.markerKick)
		}
		done(err)
	})
}

// applyAndWait is apply for a request handler: it waits for the write,
// or for ctx.
func (c *Coordinator) applyAndWait(ctx context.Context, id string, e *txnEntry, next *txn.Metadata, markers bool) error {
	ch := make(chan error, 1)
	c.apply(id, e, next, markers, func(err error) { ch <- err })
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return kerr.RequestTimedOut
	}
}

// decide runs f on id's current state under the lock and, when it asks
// for a write, marks the id pending and returns the entry to write for.
func (c *Coordinator) decide(id string, create bool, f func(cur *txn.Metadata, pending bool) txn.Decision) (*txnEntry, txn.Decision, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, _, err := c.entryLocked(id)
	if err != nil {
		return nil, txn.Decision{}, err
	}
	var cur *txn.Metadata
	pending := false
	if e != nil {
		cur, pending = e.meta, e.pending
	}
	d := f(cur, pending)
	if d.Next == nil {
		return nil, d, nil
	}
	if e == nil {
		if !create {
			return nil, txn.Decision{Err: kerr.InvalidProducerIDMapping}, nil
		}
		e = &txnEntry{}
		c.mu.txns[id] = e
	}
	e.pending = true
	return e, d, nil
}

// InitProducerID serves InitProducerId with a transactional id.
func (c *Coordinator) InitProducerID(ctx context.Context, req txn.InitRequest) (int64, int16, error) {
	if req.Timeout <= 0 || req.Timeout > c.cfg.MaxTimeout {
		return -1, -1, kerr.InvalidTransactionTimeout
	}
	// A client that skipped FindCoordinator still creates the topic on
	// first use; it learns the coordinator from NOT_COORDINATOR.
	if err := c.topic.Ensure(ctx); err != nil {
		c.logger.Warn("initializing a transactional producer id", "transactional.id", req.TransactionalID, "err", err)
		return -1, -1, kerr.CoordinatorNotAvailable
	}
	newID := txn.NoProducerID
	for {
		e, d, err := c.decide(req.TransactionalID, true, func(cur *txn.Metadata, pending bool) txn.Decision {
			return txn.InitProducerID(cur, pending, req, newID, time.Now())
		})
		if err != nil {
			return -1, -1, err
		}
		if errors.Is(d.Err, txn.ErrNeedProducerID) {
			if newID != txn.NoProducerID {
				return -1, -1, kerr.UnknownServerError // cannot happen: one id is enough
			}
			if newID, err = c.host.AllocateProducerID(ctx); err != nil {
				c.logger.Warn("allocating producer id", "err", err)
				return -1, -1, kerr.CoordinatorNotAvailable
			}
			continue
		}
		if d.Next == nil {
			return -1, -1, d.Err
		}
		werr := c.applyAndWait(ctx, req.TransactionalID, e, d.Next, d.Markers)
		switch {
		case d.Err != nil:
			return -1, -1, d.Err
		case werr != nil:
			return -1, -1, werr
		}
		return d.Next.ProducerID, d.Next.ProducerEpoch, nil
	}
}

// AddPartitions serves AddPartitionsToTxn and AddOffsetsToTxn (the
// group's partition of __consumer_offsets).
func (c *Coordinator) AddPartitions(ctx context.Context, id string, producerID int64, epoch int16, tps []txn.TopicPartition) error {
	e, d, err := c.decide(id, false, func(cur *txn.Metadata, pending bool) txn.Decision {
		return txn.AddPartitions(cur, pending, producerID, epoch, tps, time.Now())
	})
	if err != nil {
		return err
	}
	if d.Next == nil {
		return d.Err
	}
	return c.applyAndWait(ctx, id, e, d.Next, false)
}

// EndTxn serves EndTxn: the answer comes once PrepareCommit or
// PrepareAbort is written; the markers follow.
func (c *Coordinator) EndTxn(ctx context.Context, id string, producerID int64, epoch int16, commit bool) error {
	e, d, err := c.decide(id, false, func(cur *txn.Metadata, pending bool) txn.Decision {
		return txn.EndTxn(cur, pending, producerID, epoch, commit, time.Now())
	})
	if err != nil {
		return err
	}
	if d.Next == nil {
		return d.Err
	}
	return c.applyAndWait(ctx, id, e, d.Next, true)
}

// VerifyPartition reports whether producerID's ongoing transaction
// holds tp (KIP-890's verification of a transactional produce).
func (c *Coordinator) VerifyPartition(id string, producerID int64, epoch int16, tp txn.TopicPartition) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, _, err := c.entryLocked(id)
	switch {
	case err != nil:
		return err
	case e == nil || e.meta == nil || e.meta.ProducerID != producerID:
		return kerr.InvalidProducerIDMapping
	case e.meta.ProducerEpoch != epoch:
		return kerr.ProducerFenced
	case e.meta.State != txn.Ongoing || !e.meta.HasPartitions([]txn.TopicPartition{tp}):
		return kerr.InvalidTxnState
	}
	return nil
}

// abortTimedOut aborts the Ongoing transactions older than their
// timeout, fencing their producer with a bumped epoch.
func (c *Coordinator) abortTimedOut(now time.Time) {
	type abort struct {
		id   string
		e    *txnEntry
		next *txn.Metadata
	}
	var aborts []abort
	c.mu.Lock()
	for id, e := range c.mu.txns {
		if e.meta == nil {
			continue
		}
		if next := txn.AbortTimedOut(e.meta, e.pending, now); next != nil {
			e.pending = true
			aborts = append(aborts, abort{id, e, next})
		}
	}
	c.mu.Unlock()
	for _, a := range aborts {
		c.logger.Info("aborting timed-out transaction", "transactional.id", a.id, "producer.id", a.next.ProducerID)
		c.apply(a.id, a.e, a.next, true, func(err error) {
			if err != nil {
				c.logger.Warn("aborting timed-out transaction", "transactional.id", a.id, "err", err)
				return
			}
			c.timedOutAborts.Add(1)
		})
	}
}

// expireIDs removes transactional ids idle for
// transactional.id.expiration.ms (a tombstone).
func (c *Coordinator) expireIDs(now time.Time) {
	var ids []string
	var entries []*txnEntry
	c.mu.Lock()
	for id, e := range c.mu.txns {
		if e.meta != nil && txn.Expire(e.meta, e.pending, c.cfg.IDExpiration, now) {
			e.pending = true
			ids, entries = append(ids, id), append(entries, e)
		}
	}
	c.mu.Unlock()
	for i, id := range ids {
		c.apply(id, entries[i], nil, false, func(err error) {
			if err != nil {
				c.logger.Debug("expiring transactional id", "transactional.id", id, "err", err)
			}
		})
	}
}

// SetProducerEpochForTesting writes id's state again with the producer
// epoch set to epoch, as many aborts would have left it. Cluster's
// failover tests use it on a running broker; nothing else may.
func (c *Coordinator) SetProducerEpochForTesting(ctx context.Context, id string, epoch int16) error {
	e, d, err := c.decide(id, false, func(cur *txn.Metadata, pending bool) txn.Decision {
		next := cur.Clone()
		next.ProducerEpoch = epoch
		return txn.Decision{Next: next}
	})
	switch {
	case err != nil:
		return err
	case d.Next == nil:
		return d.Err
	}
	return c.applyAndWait(ctx, id, e, d.Next, false)
}
