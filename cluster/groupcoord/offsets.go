package groupcoord

// The coordinator's side of the offset requests (OffsetCommit,
// OffsetFetch, OffsetDelete) and the offsets.retention.minutes sweep.
// Each takes the lock itself; writes to __consumer_offsets happen after
// it is released, and committed offsets are applied to the group only
// once replicated.

import (
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/cluster/group"
	"github.com/kbroker/kbroker/internal/wallclock"
	"github.com/kbroker/kbroker/wire/record"
)

// offsetMetadataMaxBytes is offset.metadata.max.bytes' default.
const offsetMetadataMaxBytes = 4096

// CommitMember is who commits: a member of the group's current
// generation, or a simple consumer (generation -1, no member id).
type CommitMember struct {
	MemberID, InstanceID string
	Generation           int32
	// Version is the OffsetCommit version (a consumer group member needs
	// v9+).
	Version int16
}

// PartitionOffset is one partition's offset in an OffsetCommit.
type PartitionOffset struct {
	TP          group.TopicPartition
	Offset      int64
	LeaderEpoch int32
	Metadata    string
}

// CommitOffsets validates a commit and writes its offsets. done gets one
// error per entry of offsets once they are replicated (or failed):
// OFFSET_METADATA_TOO_LARGE for an entry whose metadata is longer than
// offset.metadata.max.bytes, the group's error for all of them when the
// commit is refused, the write's error otherwise. It may run before
// CommitOffsets returns. A simple consumer may commit to a group without
// members, which is created Empty if needed.
func (c *Coordinator) CommitOffsets(groupID string, by CommitMember, offsets []PartitionOffset, done func([]error)) {
	errs := make([]error, len(offsets))
	failAll := func(err error) {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
	}
	if groupID == "" {
		failAll(kerr.InvalidGroupID)
		done(errs)
		return
	}
	now := time.Now()
	c.mu.Lock()
	g, err := c.groupLocked(groupID, by.Generation < 0)
	if err == nil && g == nil {
		err = kerr.IllegalGeneration
	}
	if err == nil {
		if cg := g.Consumer(); cg != nil {
			err = cg.ValidateCommit(by.MemberID, by.Generation, by.Version, false)
		} else {
			err = g.ValidateCommit(by.MemberID, by.InstanceID, by.Generation, now)
		}
	}
	if err != nil {
		c.mu.Unlock()
		failAll(err)
		done(errs)
		return
	}
	accepted, recs := offsetRecords(groupID, offsets, now, errs)
	p := c.PartitionFor(groupID)
	c.mu.Unlock()
	if len(recs) == 0 {
		done(errs)
		return
	}
	c.store(p, recs, func(err error) {
		if err == nil {
			c.mu.Lock()
			if c.isCurrentLocked(g) {
				g.CommitOffsets(accepted)
			}
			c.mu.Unlock()
		} else {
			failAll(err)
		}
		done(errs)
	})
}

// FetchedTopic is one topic of a group's answer.
type FetchedTopic struct {
	Topic      string
	Partitions []FetchedOffset
}

type FetchedOffset struct {
	Partition int32
	Offset    group.Offset
	Err       error
}

// FetchOffsets reads a group's offsets (replicated ones only) of topics
// in order; topics nil means all, by topic and partition. A partition
// without an offset gets offset -1.
func (c *Coordinator) FetchOffsets(groupID string, topics map[string][]int32, order []string) ([]FetchedTopic, error) {
	if groupID == "" {
		return nil, kerr.InvalidGroupID
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	g, err := c.groupLocked(groupID, false)
	if err != nil {
		return nil, err
	}
	if topics == nil {
		if g == nil {
			return nil, nil
		}
		byTopic := map[string][]FetchedOffset{}
		for tp, o := range g.Offsets {
			byTopic[tp.Topic] = append(byTopic[tp.Topic], FetchedOffset{Partition: tp.Partition, Offset: o})
		}
		var out []FetchedTopic
		for _, t := range slices.Sorted(maps.Keys(byTopic)) {
			ps := byTopic[t]
			slices.SortFunc(ps, func(a, b FetchedOffset) int { return int(a.Partition - b.Partition) })
			out = append(out, FetchedTopic{Topic: t, Partitions: ps})
		}
		return out, nil
	}
	var out []FetchedTopic
	for _, t := range order {
		ft := FetchedTopic{Topic: t}
		for _, p := range topics[t] {
			o := group.Offset{Offset: -1, LeaderEpoch: -1}
			if g != nil {
				if got, ok := g.Offsets[group.TopicPartition{Topic: t, Partition: p}]; ok {
					o = got
				}
			}
			ft.Partitions = append(ft.Partitions, FetchedOffset{Partition: p, Offset: o})
		}
		out = append(out, ft)
	}
	return out, nil
}

// DeleteOffsets deletes a group's offsets of partitions whose topics no
// member subscribes to (GROUP_SUBSCRIBED_TO_TOPIC for the others). done
// is called exactly once, possibly before DeleteOffsets returns: with
// the group's error and no partition errors when the group refuses (not
// found, NON_EMPTY_GROUP when its members' subscriptions cannot be read),
// or with one error per entry of tps and the write's error once the
// tombstones are replicated.
func (c *Coordinator) DeleteOffsets(groupID string, tps []group.TopicPartition, done func(partErrs []error, err error)) {
	if groupID == "" {
		done(nil, kerr.InvalidGroupID)
		return
	}
	c.mu.Lock()
	g, err := c.groupLocked(groupID, false)
	switch {
	case err != nil:
	case g == nil || g.State() == group.Dead:
		err = kerr.GroupIDNotFound
	}
	var subscribed map[string]bool
	if err == nil && g.HasMembers() {
		subs, known := g.SubscribedTopics()
		if !known {
			err = kerr.NonEmptyGroup
		}
		subscribed = subs
	}
	if err != nil {
		c.mu.Unlock()
		done(nil, err)
		return
	}
	partErrs := make([]error, len(tps))
	var recs []record.Record
	for i, tp := range tps {
		if subscribed[tp.Topic] {
			partErrs[i] = kerr.GroupSubscribedToTopic
			continue
		}
		if _, ok := g.Offsets[tp]; ok {
			delete(g.Offsets, tp)
			recs = append(recs, record.Record{Key: group.OffsetKey(groupID, tp)})
		}
	}
	p := c.PartitionFor(groupID)
	c.mu.Unlock()
	if len(recs) == 0 {
		done(partErrs, nil)
		return
	}
	c.store(p, recs, func(err error) { done(partErrs, err) })
}

// expireOffsets is the offsets.retention.minutes sweep.
func (c *Coordinator) expireOffsets(now time.Time) {
	retention := c.cfg.OffsetsRetention
	byPart := map[int32][]record.Record{}
	c.mu.Lock()
	for id, g := range c.mu.groups {
		p := c.PartitionFor(id)
		if st, ok := c.mu.Parts[p]; !ok || st.Loading {
			continue
		}
		for _, tp := range g.ExpireOffsets(retention, now) {
			byPart[p] = append(byPart[p], record.Record{Key: group.OffsetKey(id, tp)})
		}
		if g.State() == group.Empty && len(g.Offsets) == 0 && now.Sub(g.StateTimestamp()) >= retention {
			g.MarkDead(now)
			delete(c.mu.groups, id)
			if g.Consumer() != nil {
				byPart[p] = append(byPart[p], kvRecords(group.ConsumerTombstones(id))...)
			} else {
				byPart[p] = append(byPart[p], record.Record{Key: group.GroupKey(id)})
			}
		}
	}
	c.mu.Unlock()
	for p, recs := range byPart {
		c.store(p, recs, func(err error) {
			if err != nil {
				c.logger.Warn("writing expired offsets tombstones", "partition", p, "err", err)
			}
		})
	}
}

// ValidateFetchMember checks the member id and epoch of an OffsetFetch v9+
// of a consumer group (STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID), as Kafka's
// ConsumerGroup.validateOffsetFetch; other groups are not checked.
func (c *Coordinator) ValidateFetchMember(groupID, memberID string, epoch int32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	g, err := c.groupLocked(groupID, false)
	if err != nil || g == nil || g.Consumer() == nil {
		return nil
	}
	return g.Consumer().ValidateFetch(memberID, epoch)
}

// offsetRecords turns a commit's offsets into the offsets to apply once
// written and their __consumer_offsets records. An offset whose metadata
// is too long is left out, with OFFSET_METADATA_TOO_LARGE in errs.
func offsetRecords(groupID string, offsets []PartitionOffset, now time.Time, errs []error) (map[group.TopicPartition]group.Offset, []record.Record) {
	accepted := make(map[group.TopicPartition]group.Offset, len(offsets))
	recs := make([]record.Record, 0, len(offsets))
	for i, po := range offsets {
		if len(po.Metadata) > offsetMetadataMaxBytes {
			errs[i] = kerr.OffsetMetadataTooLarge
			continue
		}
		o := group.Offset{Offset: po.Offset, LeaderEpoch: po.LeaderEpoch, Metadata: po.Metadata, CommitTimestamp: wallclock.Stamp(now).UnixMilli()}
		accepted[po.TP] = o
		recs = append(recs, record.Record{Key: group.OffsetKey(groupID, po.TP), Value: group.OffsetValue(o)})
	}
	return accepted, recs
}
