package txncoord

// The marker sender: for every transaction in PrepareCommit or
// PrepareAbort, WriteTxnMarkers to the leader of each of its partitions
// (this broker's own through the same code as a remote one), retried
// every txnMarkerRetry until every partition has its marker, whoever
// leads it by then; then the Complete state is written.

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/txn"
	"github.com/kbroker/kbroker/metadata"
)

// txnMarkerTimeout bounds one WriteTxnMarkers round trip.
const txnMarkerTimeout = 10 * time.Second

// markerJob is the markers of one Prepare state still to write.
type markerJob struct {
	meta             *txn.Metadata // the Prepare state being completed
	coordinatorEpoch int32
	remaining        map[txn.TopicPartition]struct{}
}

func (c *Coordinator) addMarkerJobLocked(id string, m *txn.Metadata) {
	st, ok := c.mu.Parts[c.PartitionFor(id)]
	if !ok {
		return
	}
	remaining := make(map[txn.TopicPartition]struct{}, len(m.Partitions))
	for tp := range m.Partitions {
		remaining[tp] = struct{}{}
	}
	c.mu.markers[id] = &markerJob{meta: m, coordinatorEpoch: st.LeaderEpoch, remaining: remaining}
}

// sendMarkers runs rounds of marker writes until ctx ends.
func (c *Coordinator) sendMarkers(ctx context.Context) {
	t := time.NewTicker(txnMarkerRetry)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-c.markerKick:
		}
		c.markerRound(ctx)
	}
}

// markerTarget is one leader's request and which job each marker is for.
type markerTarget struct {
	req  *kmsg.WriteTxnMarkersRequest
	jobs map[int64]string // producer id → transactional id
}

// markerRound sends every pending marker once and completes the jobs
// whose partitions all have theirs.
func (c *Coordinator) markerRound(ctx context.Context) {
	img := c.host.Image()
	written := map[string][]txn.TopicPartition{}
	targets := map[int32]*markerTarget{}
	c.mu.Lock()
	jobs := make(map[string]*markerJob, len(c.mu.markers))
	for id, j := range c.mu.markers {
		jobs[id] = j
		marker := kmsg.NewWriteTxnMarkersRequestMarker()
		marker.ProducerID, marker.ProducerEpoch = j.meta.ProducerID, j.meta.ProducerEpoch
		marker.Committed = j.meta.State == txn.PrepareCommit
		marker.CoordinatorEpoch = j.coordinatorEpoch
		perLeader := map[int32]map[string][]int32{}
		for tp := range j.remaining {
			mp, ok := img.Partition(tp.Topic, tp.Partition)
			switch {
			case !ok:
				// The topic is gone: there is nothing to mark.
				written[id] = append(written[id], tp)
			case mp.Leader != metadata.NoLeader:
				if perLeader[mp.Leader] == nil {
					perLeader[mp.Leader] = map[string][]int32{}
				}
				perLeader[mp.Leader][tp.Topic] = append(perLeader[mp.Leader][tp.Topic], tp.Partition)
			}
		}
		for leader, topics := range perLeader {
			t := targets[leader]
			if t == nil {
				t = &markerTarget{req: kmsg.NewPtrWriteTxnMarkersRequest(), jobs: map[int64]string{}}
				targets[leader] = t
			}
			m := marker
			for topic, parts := range topics {
				mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
				mt.Topic, mt.Partitions = topic, parts
				m.Topics = append(m.Topics, mt)
			}
			t.req.Markers = append(t.req.Markers, m)
			t.jobs[m.ProducerID] = id
		}
	}
	c.mu.Unlock()

	var wmu sync.Mutex
	var wg sync.WaitGroup
	for leader, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rctx, cancel := context.WithTimeout(ctx, txnMarkerTimeout)
			defer cancel()
			resp, err := c.host.WriteTxnMarkers(rctx, leader, t.req)
			if err != nil {
				c.logger.Debug("writing transaction markers", "broker", leader, "err", err)
				return
			}
			wmu.Lock()
			defer wmu.Unlock()
			for _, m := range resp.Markers {
				id, ok := t.jobs[m.ProducerID]
				if !ok {
					continue
				}
				for _, rt := range m.Topics {
					for _, rp := range rt.Partitions {
						if markerDone(rp.ErrorCode) {
							written[id] = append(written[id], txn.TopicPartition{Topic: rt.Topic, Partition: rp.Partition})
						} else {
							c.logger.Debug("transaction marker refused", "transactional.id", id, "topic", rt.Topic, "partition", rp.Partition, "err", kerr.ErrorForCode(rp.ErrorCode))
						}
					}
				}
			}
		}()
	}
	wg.Wait()
	c.completeMarkers(jobs, written)
}

// markerDone reports whether a partition's answer ends its marker's
// retries: written, or superseded (a newer producer epoch or coordinator
// already wrote one; the topic is gone).
func markerDone(code int16) bool {
	switch code {
	case 0, kerr.UnknownTopicOrPartition.Code, kerr.InvalidProducerEpoch.Code, kerr.TransactionCoordinatorFenced.Code:
		return true
	}
	return false
}

// completeMarkers removes the written partitions of the jobs sent and
// writes the Complete state of the jobs left without any.
func (c *Coordinator) completeMarkers(sent map[string]*markerJob, written map[string][]txn.TopicPartition) {
	type completion struct {
		id   string
		e    *txnEntry
		next *txn.Metadata
	}
	var done []completion
	now := time.Now()
	c.mu.Lock()
	for id, j := range sent {
		if c.mu.markers[id] != j {
			continue // dropped or replaced meanwhile
		}
		for _, tp := range written[id] {
			delete(j.remaining, tp)
		}
		if len(j.remaining) > 0 {
			continue
		}
		delete(c.mu.markers, id)
		e := c.mu.txns[id]
		if e == nil || e.pending || e.meta != j.meta {
			continue
		}
		e.pending = true
		done = append(done, completion{id, e, txn.Complete(e.meta, now)})
	}
	c.mu.Unlock()
	for _, d := range done {
		c.apply(d.id, d.e, d.next, false, func(err error) {
			if err != nil {
				c.logger.Warn("completing transaction", "transactional.id", d.id, "err", err)
				// Markers are idempotent: write them again, then retry.
				c.mu.Lock()
				if c.mu.txns[d.id] == d.e && d.e.meta != nil && !d.e.pending {
					c.addMarkerJobLocked(d.id, d.e.meta)
				}
				c.mu.Unlock()
			}
		})
	}
}
