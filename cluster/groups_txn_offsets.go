package cluster

// Transactional offset commits (TxnOffsetCommit): the offsets are held in
// the group coordinator, keyed by producer id, until the transaction's
// marker reaches the group's __consumer_offsets partition
// (WriteTxnMarkers): a COMMIT writes them as ordinary offset commits with
// acks=all and applies them, an ABORT drops them.
//
// Kafka writes them at once as a transactional batch and lets the marker
// decide at load time. Here they live in memory only until the marker:
// a coordinator failover between TxnOffsetCommit and the marker loses
// them (the transaction's output commits without its offsets, and the
// consumer reprocesses from the previous ones).

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/cluster/group"
	"github.com/kbroker/kbroker/wire/record"
)

// txnCommitOffsets validates a TxnOffsetCommit and holds its offsets for
// producerID's transaction. It returns one error per entry of offsets.
func (c *groupCoordinator) txnCommitOffsets(groupID string, producerID int64, by commitMember, offsets []partitionOffset) []error {
	errs := make([]error, len(offsets))
	failAll := func(err error) []error {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	if groupID == "" {
		return failAll(kerr.InvalidGroupID)
	}
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	g, err := c.groupLocked(groupID, true)
	if err == nil && (by.Generation >= 0 || by.MemberID != "") {
		// KIP-447: a member of a generation is checked as for a commit.
		err = g.ValidateCommit(by.MemberID, by.InstanceID, by.Generation, now)
	}
	if err != nil {
		return failAll(err)
	}
	if c.mu.pendingTxn == nil {
		c.mu.pendingTxn = map[int64]map[string]map[group.TopicPartition]group.Offset{}
	}
	byGroup := c.mu.pendingTxn[producerID]
	if byGroup == nil {
		byGroup = map[string]map[group.TopicPartition]group.Offset{}
		c.mu.pendingTxn[producerID] = byGroup
	}
	if byGroup[groupID] == nil {
		byGroup[groupID] = map[group.TopicPartition]group.Offset{}
	}
	for i, po := range offsets {
		if len(po.Metadata) > offsetMetadataMaxBytes {
			errs[i] = kerr.OffsetMetadataTooLarge
			continue
		}
		byGroup[groupID][po.TP] = group.Offset{Offset: po.Offset, LeaderEpoch: po.LeaderEpoch, Metadata: po.Metadata, CommitTimestamp: now.UnixMilli()}
	}
	return errs
}

// markUnstable sets UNSTABLE_OFFSET_COMMIT (and offset -1) on the
// partitions of got whose offset a transaction of groupID holds (KIP-447:
// a consumer asking with RequireStable waits until the marker decided).
func (c *groupCoordinator) markUnstable(groupID string, got []fetchedTopic) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, byGroup := range c.mu.pendingTxn {
		pending := byGroup[groupID]
		if len(pending) == 0 {
			continue
		}
		for ti := range got {
			for pi := range got[ti].partitions {
				fo := &got[ti].partitions[pi]
				if _, ok := pending[group.TopicPartition{Topic: got[ti].topic, Partition: fo.partition}]; ok {
					fo.err = kerr.UnstableOffsetCommit
					fo.offset = group.Offset{Offset: -1, LeaderEpoch: -1}
				}
			}
		}
	}
}

// dropPendingLocked forgets the transactional offsets of the groups of
// partition p when this broker stops coordinating them.
func (c *groupCoordinator) dropPendingLocked(p int32) {
	n := c.numPartitions()
	for pid, byGroup := range c.mu.pendingTxn {
		for id := range byGroup {
			if groupPartition(id, n) == p {
				delete(byGroup, id)
			}
		}
		if len(byGroup) == 0 {
			delete(c.mu.pendingTxn, pid)
		}
	}
}

// completeTxnOffsets applies producerID's marker on partition p: its
// pending offsets of p's groups are written and applied (commit) or
// dropped (abort). done is called once, possibly before it returns.
func (c *groupCoordinator) completeTxnOffsets(p int32, producerID int64, commit bool, done func(error)) {
	type pendingGroup struct {
		g       *group.Group
		offsets map[group.TopicPartition]group.Offset
	}
	var groups []pendingGroup
	var recs []record.Record
	c.mu.Lock()
	n := c.numPartitions()
	byGroup := c.mu.pendingTxn[producerID]
	for id, offsets := range byGroup {
		if groupPartition(id, n) != p {
			continue
		}
		delete(byGroup, id)
		if !commit {
			continue
		}
		g := c.mu.groups[id]
		if g == nil {
			continue // dropped with its partition: its coordinator moved
		}
		groups = append(groups, pendingGroup{g, offsets})
		for tp, o := range offsets {
			recs = append(recs, record.Record{Key: group.OffsetKey(id, tp), Value: group.OffsetValue(o)})
		}
	}
	if len(byGroup) == 0 {
		delete(c.mu.pendingTxn, producerID)
	}
	c.mu.Unlock()
	if len(recs) == 0 {
		done(nil)
		return
	}
	c.store(p, recs, func(err error) {
		if err == nil {
			c.mu.Lock()
			for _, pg := range groups {
				if c.isCurrentLocked(pg.g) {
					pg.g.CommitOffsets(pg.offsets)
				}
			}
			c.mu.Unlock()
		}
		done(err)
	})
}
