package sharecoord

// Share groups (KIP-932) of the __consumer_offsets partitions this
// broker leads: membership and assignment around share.Group, kept in
// memory (a member whose coordinator moved gets UNKNOWN_MEMBER_ID and
// joins again at the new one; the share-partition states, which are what
// must not be lost, are in __share_group_state), and the admin
// operations on their share-partition states, through the Persister.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/cluster/share"
	"github.com/kbroker/kbroker/metadata"
)

// shareGroup is one share group and the topics whose share-partitions
// it may have state for (subscribed once, or altered by an admin).
type shareGroup struct {
	g        *share.Group
	interval time.Duration
	topics   map[string]bool
}

// HeartbeatAnswer is ShareGroupHeartbeat's answer.
type HeartbeatAnswer struct {
	MemberEpoch int32
	Interval    time.Duration
	// Assignment by topic name; nil: not sent.
	Assignment map[string][]int32
}

// ErrGroupNotEmpty: an admin operation that needs the group without
// members (Kafka: NON_EMPTY_GROUP).
var ErrGroupNotEmpty = kerr.NonEmptyGroup

// partitionCounts are the partition counts of the topics in names that
// exist in img.
func partitionCounts(img *metadata.Image, names []string) map[string]int32 {
	out := make(map[string]int32, len(names))
	for _, t := range names {
		if tp, ok := img.Topics[t]; ok {
			out[t] = int32(len(tp.Partitions))
		}
	}
	return out
}

// subscribed are the topics g's members subscribe to.
func subscribed(g *share.Group) []string {
	set := map[string]bool{}
	for _, m := range g.Members() {
		for _, t := range m.Topics {
			set[t] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// groupLocked is the share group id, checking this broker coordinates
// it; create makes an empty one.
func (c *Coordinator) groupLocked(id string, create bool) (*shareGroup, error) {
	if c.mu.closed || !c.host.LeadsGroup(id) {
		delete(c.mu.groups, id)
		return nil, kerr.NotCoordinator
	}
	sg := c.mu.groups[id]
	if sg == nil && create {
		cfg, interval := c.cfg.Group, 5*time.Second
		if c.cfg.GroupFor != nil {
			cfg, interval = c.cfg.GroupFor(id)
		}
		sg = &shareGroup{g: share.NewGroup(id, cfg), interval: interval, topics: map[string]bool{}}
		c.mu.groups[id] = sg
	}
	return sg, nil
}

// Heartbeat applies one ShareGroupHeartbeat of group id.
func (c *Coordinator) Heartbeat(id string, hb share.Heartbeat) (HeartbeatAnswer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sg, err := c.groupLocked(id, hb.MemberEpoch == share.JoinEpoch)
	if err != nil {
		return HeartbeatAnswer{}, err
	}
	if sg == nil {
		if hb.MemberEpoch == share.LeaveEpoch {
			return HeartbeatAnswer{}, kerr.UnknownMemberID
		}
		// The coordinator moved or restarted: the member joins again.
		return HeartbeatAnswer{}, fmt.Errorf("%w: share group %s is not known here", kerr.UnknownMemberID, id)
	}
	topics := append(slices.Clone(hb.Topics), subscribed(sg.g)...)
	res, _, err := sg.g.Heartbeat(hb, partitionCounts(c.host.Image(), topics), time.Now())
	if err != nil {
		return HeartbeatAnswer{}, shareError(err)
	}
	for _, t := range hb.Topics {
		sg.topics[t] = true
	}
	return HeartbeatAnswer{MemberEpoch: res.MemberEpoch, Interval: sg.interval, Assignment: res.Assignment}, nil
}

// shareError maps share's membership errors to Kafka's.
func shareError(err error) error {
	switch {
	case errors.Is(err, share.ErrUnknownMemberID):
		return fmt.Errorf("%w: %v", kerr.UnknownMemberID, err)
	case errors.Is(err, share.ErrFencedMemberEpoch):
		return fmt.Errorf("%w: %v", kerr.FencedMemberEpoch, err)
	case errors.Is(err, share.ErrGroupMaxSizeReached):
		return fmt.Errorf("%w: %v", kerr.GroupMaxSizeReached, err)
	case errors.Is(err, share.ErrInvalidHeartbeat):
		return fmt.Errorf("%w: %v", kerr.InvalidRequest, err)
	}
	return err
}

// expireMembers removes the members whose session ended.
func (c *Coordinator) expireMembers(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	img := c.host.Image()
	for _, sg := range c.mu.groups {
		if gone := sg.g.Expire(partitionCounts(img, subscribed(sg.g)), now); len(gone) > 0 {
			c.logger.Debug("share group members expired", "group", sg.g.ID, "members", gone)
		}
	}
}

// GroupDescription is one share group as ShareGroupDescribe and
// ListGroups show it.
type GroupDescription struct {
	ID      string
	State   string // Empty or Stable
	Epoch   int32
	Members []share.Member
}

func describe(sg *shareGroup) GroupDescription {
	d := GroupDescription{ID: sg.g.ID, State: "Empty", Epoch: sg.g.Epoch()}
	for _, m := range sg.g.Members() {
		mm := *m
		mm.Assignment = maps.Clone(m.Assignment)
		d.Members = append(d.Members, mm)
	}
	if len(d.Members) > 0 {
		d.State = "Stable"
	}
	return d
}

// Describe is share group id, or GROUP_ID_NOT_FOUND.
func (c *Coordinator) Describe(id string) (GroupDescription, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sg, err := c.groupLocked(id, false)
	if err != nil {
		return GroupDescription{}, err
	}
	if sg == nil {
		return GroupDescription{}, fmt.Errorf("%w: no share group %s", kerr.GroupIDNotFound, id)
	}
	return describe(sg), nil
}

// Has reports whether id is a share group this broker coordinates.
func (c *Coordinator) Has(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.groups[id] != nil
}

// List is every share group this broker coordinates, by id.
func (c *Coordinator) List() []GroupDescription {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]GroupDescription, 0, len(c.mu.groups))
	for _, id := range slices.Sorted(maps.Keys(c.mu.groups)) {
		if c.host.LeadsGroup(id) {
			out = append(out, describe(c.mu.groups[id]))
		}
	}
	return out
}

// PartitionOffset is one share-partition's start offset as
// DescribeShareGroupOffsets shows it, or its error.
type PartitionOffset struct {
	Topic       string
	TopicID     [16]byte
	Partition   int32
	StartOffset int64
	LeaderEpoch int32
	// DeliveryComplete: see Summary.
	DeliveryComplete int32
	Err              error
}

// emptyGroup is group id for an admin operation: coordinated here and
// without members; create makes it.
func (c *Coordinator) emptyGroup(id string, create bool) (*shareGroup, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sg, err := c.groupLocked(id, create)
	switch {
	case err != nil:
		return nil, err
	case sg == nil:
		return nil, fmt.Errorf("%w: no share group %s", kerr.GroupIDNotFound, id)
	case !sg.g.Empty():
		return nil, fmt.Errorf("%w: share group %s has members", ErrGroupNotEmpty, id)
	}
	return sg, nil
}

// groupTopics are the topics share group id may have state for.
func (c *Coordinator) groupTopics(id string) ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sg, err := c.groupLocked(id, false)
	if err != nil {
		return nil, err
	}
	if sg == nil {
		return nil, fmt.Errorf("%w: no share group %s", kerr.GroupIDNotFound, id)
	}
	set := maps.Clone(sg.topics)
	for _, t := range subscribed(sg.g) {
		set[t] = true
	}
	return slices.Sorted(maps.Keys(set)), nil
}

// DescribeOffsets is the start offsets of group id's share-partitions:
// those of topics (partitions by topic; nil: every partition of every
// topic the group has state for). A partition without state is left out
// when all were asked for, answered with its start offset -1 otherwise,
// as Kafka does.
func (c *Coordinator) DescribeOffsets(ctx context.Context, id string, topics map[string][]int32) ([]PartitionOffset, error) {
	all := topics == nil
	if all {
		names, err := c.groupTopics(id)
		if err != nil {
			return nil, err
		}
		topics = map[string][]int32{}
		img := c.host.Image()
		for _, t := range names {
			if tp, ok := img.Topics[t]; ok {
				for p := range len(tp.Partitions) {
					topics[t] = append(topics[t], int32(p))
				}
			}
		}
	} else if _, err := c.groupTopics(id); err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		return nil, err
	}
	img := c.host.Image()
	var out []PartitionOffset
	for _, t := range slices.Sorted(maps.Keys(topics)) {
		tp, ok := img.Topics[t]
		for _, p := range topics[t] {
			po := PartitionOffset{Topic: t, Partition: p, StartOffset: -1, LeaderEpoch: -1}
			if !ok || p < 0 || int(p) >= len(tp.Partitions) {
				po.Err = kerr.UnknownTopicOrPartition
				out = append(out, po)
				continue
			}
			po.TopicID = tp.ID
			s, err := c.persister.Summary(ctx, share.StateKey{Group: id, TopicID: tp.ID, Partition: p})
			switch {
			case errors.Is(err, kerr.UnknownTopicOrPartition):
				if all {
					continue
				}
			case err != nil:
				po.Err = err
			default:
				po.StartOffset, po.LeaderEpoch, po.DeliveryComplete = s.StartOffset, s.LeaderEpoch, s.DeliveryComplete
			}
			out = append(out, po)
		}
	}
	return out, nil
}

// AlterOffsets sets the start offsets of share group id's partitions
// (by topic, then partition): each share-partition starts over there
// with a new state epoch, so its leader's state is fenced and read
// again. The group must be empty; it is created if it does not exist.
func (c *Coordinator) AlterOffsets(ctx context.Context, id string, offsets map[string]map[int32]int64) (map[string]map[int32]error, error) {
	sg, err := c.emptyGroup(id, true)
	if err != nil {
		return nil, err
	}
	img := c.host.Image()
	out := map[string]map[int32]error{}
	for t, parts := range offsets {
		out[t] = map[int32]error{}
		tp, ok := img.Topics[t]
		if ok {
			c.mu.Lock()
			sg.topics[t] = true
			c.mu.Unlock()
		}
		for p, off := range parts {
			if !ok || p < 0 || int(p) >= len(tp.Partitions) {
				out[t][p] = kerr.UnknownTopicOrPartition
				continue
			}
			k := share.StateKey{Group: id, TopicID: tp.ID, Partition: p}
			epoch := int32(0)
			s, err := c.persister.Summary(ctx, k)
			switch {
			case err == nil:
				epoch = s.StateEpoch + 1
			case !errors.Is(err, kerr.UnknownTopicOrPartition):
				out[t][p] = err
				continue
			}
			out[t][p] = c.persister.Initialize(ctx, k, epoch, off)
		}
	}
	return out, nil
}

// DeleteOffsets deletes the share-partition states of share group id for
// topics. The group must be empty.
func (c *Coordinator) DeleteOffsets(ctx context.Context, id string, topics []string) (map[string]error, error) {
	sg, err := c.emptyGroup(id, false)
	if err != nil {
		return nil, err
	}
	img := c.host.Image()
	out := map[string]error{}
	for _, t := range topics {
		tp, ok := img.Topics[t]
		if !ok {
			out[t] = kerr.UnknownTopicOrPartition
			continue
		}
		for p := range len(tp.Partitions) {
			if err := c.persister.Delete(ctx, share.StateKey{Group: id, TopicID: tp.ID, Partition: int32(p)}); err != nil {
				out[t] = err
			}
		}
		if out[t] == nil {
			c.mu.Lock()
			delete(sg.topics, t)
			c.mu.Unlock()
		}
	}
	return out, nil
}

// DeleteGroup deletes share group id and its share-partition states
// (DeleteGroups). It must be empty (NON_EMPTY_GROUP).
func (c *Coordinator) DeleteGroup(ctx context.Context, id string) error {
	topics, err := c.groupTopics(id)
	if err != nil {
		return err
	}
	res, err := c.DeleteOffsets(ctx, id, topics)
	if err != nil {
		return err
	}
	for _, t := range slices.Sorted(maps.Keys(res)) {
		if res[t] != nil && !errors.Is(res[t], kerr.UnknownTopicOrPartition) {
			return res[t]
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if sg := c.mu.groups[id]; sg != nil && sg.g.Empty() {
		delete(c.mu.groups, id)
	}
	return nil
}
