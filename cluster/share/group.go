package share

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Errors of ShareGroupHeartbeat, answered with the Kafka error of the same
// name.
var (
	ErrUnknownMemberID     = errors.New("share: unknown member id")
	ErrFencedMemberEpoch   = errors.New("share: fenced member epoch")
	ErrGroupMaxSizeReached = errors.New("share: group max size reached")
	ErrInvalidHeartbeat    = errors.New("share: invalid heartbeat")
)

// Member epochs a heartbeat carries besides a member's current one.
const (
	JoinEpoch  = 0
	LeaveEpoch = -1
)

// GroupConfig are a share group's membership settings (Kafka's
// group.share.session.timeout.ms and group.share.max.size).
type GroupConfig struct {
	SessionTimeout time.Duration
	MaxSize        int
}

// DefaultGroupConfig is Kafka's defaults.
func DefaultGroupConfig() GroupConfig {
	return GroupConfig{SessionTimeout: 45 * time.Second, MaxSize: 200}
}

// Member is one consumer of a share group.
type Member struct {
	ID, ClientID, ClientHost, RackID string
	// Epoch is the group epoch the member last heartbeated at.
	Epoch, previousEpoch int32
	// Topics is its subscription, sorted.
	Topics []string
	// Assignment is the partitions it fetches from, by topic.
	Assignment map[string][]int32
	deadline   time.Time
}

// Heartbeat is one ShareGroupHeartbeat request. Topics nil keeps the
// subscription (an incremental heartbeat).
type Heartbeat struct {
	MemberID             string
	MemberEpoch          int32
	Topics               []string
	RackID               *string
	ClientID, ClientHost string
}

// HeartbeatResult is the answer: the member's epoch and, when it changed
// or the request was a full one, its assignment.
type HeartbeatResult struct {
	MemberEpoch int32
	Assignment  map[string][]int32 // nil: not sent
}

// Group is the membership of one share group: its members, their
// subscriptions and assignments, and the group epoch that moves on every
// change (Kafka's share group state in GroupMetadataManager). Unlike a
// consumer group, a partition may be assigned to several members at once
// and nothing is revoked first: records are handed out per acquisition,
// not per assignment. Time is passed in; the owner serialises calls.
type Group struct {
	ID      string
	cfg     GroupConfig
	epoch   int32
	members map[string]*Member
	// partitions are the partition counts of the subscribed topics the
	// last assignment was computed from.
	partitions map[string]int32
}

// NewGroup is an empty share group.
func NewGroup(id string, cfg GroupConfig) *Group {
	return &Group{ID: id, cfg: cfg, members: map[string]*Member{}, partitions: map[string]int32{}}
}

// Epoch is the group epoch.
func (g *Group) Epoch() int32 { return g.epoch }

// Members are the members sorted by id.
func (g *Group) Members() []*Member {
	out := make([]*Member, 0, len(g.members))
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		out = append(out, g.members[id])
	}
	return out
}

// Empty reports whether the group has no members (its offsets may then
// be altered or deleted).
func (g *Group) Empty() bool { return len(g.members) == 0 }

// Heartbeat applies one heartbeat. The assignment it returns is the
// group's own: the caller encodes it and must not change it. partitions gives the partition count
// of each existing topic; a subscribed topic it lacks gets nothing.
// Removed members (a leave) are returned so their records are released.
func (g *Group) Heartbeat(hb Heartbeat, partitions map[string]int32, now time.Time) (HeartbeatResult, []string, error) {
	if hb.MemberID == "" {
		return HeartbeatResult{}, nil, fmt.Errorf("%w: no member id", ErrInvalidHeartbeat)
	}
	m := g.members[hb.MemberID]
	joined := false
	switch {
	case hb.MemberEpoch == LeaveEpoch:
		if m == nil {
			return HeartbeatResult{}, nil, ErrUnknownMemberID
		}
		g.remove(hb.MemberID, partitions)
		return HeartbeatResult{MemberEpoch: LeaveEpoch}, []string{hb.MemberID}, nil
	case hb.MemberEpoch == JoinEpoch && m == nil:
		if hb.Topics == nil {
			return HeartbeatResult{}, nil, fmt.Errorf("%w: a joining member names its topics", ErrInvalidHeartbeat)
		}
		if g.cfg.MaxSize > 0 && len(g.members) >= g.cfg.MaxSize {
			return HeartbeatResult{}, nil, ErrGroupMaxSizeReached
		}
		m = &Member{ID: hb.MemberID}
		g.members[hb.MemberID] = m
		joined = true
	case m == nil:
		return HeartbeatResult{}, nil, ErrUnknownMemberID
	case hb.MemberEpoch != JoinEpoch && hb.MemberEpoch != m.Epoch && hb.MemberEpoch != m.previousEpoch:
		// The previous epoch is accepted too: the answer that moved the
		// member on may have been lost.
		return HeartbeatResult{}, nil, fmt.Errorf("%w: epoch %d, member at %d", ErrFencedMemberEpoch, hb.MemberEpoch, m.Epoch)
	}
	m.ClientID, m.ClientHost = hb.ClientID, hb.ClientHost
	if hb.RackID != nil {
		m.RackID = *hb.RackID
	}
	m.deadline = now.Add(g.cfg.SessionTimeout)
	// One new epoch for whatever changed: a member joined, a subscription
	// or a subscribed topic's partitions.
	changed := joined
	if hb.Topics != nil {
		topics := slices.Clone(hb.Topics)
		slices.Sort(topics)
		topics = slices.Compact(topics)
		if !slices.Equal(topics, m.Topics) {
			m.Topics = topics
			changed = true
		}
	}
	if changed || g.topicsChanged(partitions) {
		g.epoch++
	}
	before := m.Epoch
	if m.Epoch != g.epoch {
		g.assign(partitions)
		m.previousEpoch, m.Epoch = m.Epoch, g.epoch
	}
	res := HeartbeatResult{MemberEpoch: m.Epoch}
	if hb.Topics != nil || m.Epoch != before {
		res.Assignment = m.Assignment
	}
	return res, nil, nil
}

// Expire removes the members whose session ended at or before now, and
// returns them so their records are released.
func (g *Group) Expire(partitions map[string]int32, now time.Time) []string {
	var gone []string
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		if !g.members[id].deadline.After(now) {
			gone = append(gone, id)
		}
	}
	for _, id := range gone {
		g.remove(id, partitions)
	}
	return gone
}

func (g *Group) remove(id string, partitions map[string]int32) {
	delete(g.members, id)
	g.epoch++
	g.assign(partitions)
}

// topicsChanged reports whether a subscribed topic's partition count
// differs from the one the last assignment used.
func (g *Group) topicsChanged(partitions map[string]int32) bool {
	for _, m := range g.members {
		for _, t := range m.Topics {
			if partitions[t] != g.partitions[t] {
				return true
			}
		}
	}
	return false
}

// assign gives every member its partitions, topic by topic, among the
// topic's subscribers sorted by id: with no more subscribers than
// partitions each partition goes to one of them, round robin; with more,
// each subscriber gets one partition and each partition is shared by
// about subscribers/partitions members. Every partition of a subscribed
// topic is fetched, and no member gets more than its share.
func (g *Group) assign(partitions map[string]int32) {
	subscribers := map[string][]string{}
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		g.members[id].Assignment = map[string][]int32{}
		for _, t := range g.members[id].Topics {
			subscribers[t] = append(subscribers[t], id)
		}
	}
	g.partitions = map[string]int32{}
	for t, subs := range subscribers {
		n := partitions[t]
		g.partitions[t] = n
		if n <= 0 {
			continue
		}
		if len(subs) <= int(n) {
			for p := range n {
				m := g.members[subs[int(p)%len(subs)]]
				m.Assignment[t] = append(m.Assignment[t], p)
			}
			continue
		}
		for i, id := range subs {
			g.members[id].Assignment[t] = []int32{int32(i) % n}
		}
	}
	for _, m := range g.members {
		for t := range m.Assignment {
			if len(m.Assignment[t]) == 0 {
				delete(m.Assignment, t)
			}
		}
	}
}
