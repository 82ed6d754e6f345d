package groupcoord

// The coordinator's side of the membership requests (JoinGroup,
// SyncGroup, Heartbeat, LeaveGroup) and of the group admin requests
// (DescribeGroups, ListGroups, DeleteGroups). Each takes the lock itself;
// writes to __consumer_offsets happen after it is released.

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/cluster/group"
	"github.com/kbroker/kbroker/wire/record"
)

// Join routes a JoinGroup to its group. respond is called exactly once:
// at once with the error when the group cannot be joined here, or when
// the group completes the join phase. An unknown group is created only for
// a member without a member id (UNKNOWN_MEMBER_ID otherwise).
func (c *Coordinator) Join(groupID string, req group.JoinRequest, respond func(group.JoinResult)) {
	fail := func(err error) {
		respond(group.JoinResult{Err: err, MemberID: req.MemberID, Generation: -1})
	}
	if groupID == "" {
		fail(kerr.InvalidGroupID)
		return
	}
	var tombs []record.Record
	c.mu.Lock()
	g, err := c.groupLocked(groupID, req.MemberID == "")
	switch {
	case err != nil:
		fail(err)
	case g == nil:
		fail(kerr.UnknownMemberID)
	case g.Consumer() != nil:
		// An empty consumer group becomes classic again, as in Kafka;
		// classic members cannot join a consumer group with members.
		now := time.Now()
		if err := g.ConvertToClassic(now); err != nil {
			fail(err)
			break
		}
		c.logger.Info("converted empty consumer group to a classic group", "group", groupID)
		tombs = kvRecords(group.ConsumerTombstones(groupID))
		g.Join(req, now, respond)
	default:
		g.Join(req, time.Now(), respond)
	}
	p := c.PartitionFor(groupID)
	c.mu.Unlock()
	if len(tombs) > 0 {
		c.store(p, tombs, func(err error) {
			if err != nil {
				c.logger.Warn("deleting a converted consumer group's records", "group", groupID, "err", err)
			}
		})
	}
}

// SyncGroup routes a SyncGroup to its group. respond is called exactly
// once. The leader's assignment is written to the group's partition, and
// the members waiting for it are answered once the write is replicated
// (or with its error).
func (c *Coordinator) SyncGroup(groupID string, req group.SyncRequest, respond func(group.SyncResult)) {
	if groupID == "" {
		respond(group.SyncResult{Err: kerr.InvalidGroupID})
		return
	}
	c.mu.Lock()
	g, err := c.groupLocked(groupID, false)
	if err == nil && g == nil {
		err = kerr.UnknownMemberID
	}
	if err != nil {
		c.mu.Unlock()
		respond(group.SyncResult{Err: err})
		return
	}
	if !g.Sync(req, time.Now(), respond) {
		c.mu.Unlock()
		return
	}
	gen := g.Generation()
	rec := record.Record{Key: group.GroupKey(groupID), Value: g.MetadataValue()}
	p := c.PartitionFor(groupID)
	c.mu.Unlock()

	c.store(p, []record.Record{rec}, func(err error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.isCurrentLocked(g) {
			g.AssignmentStored(gen, err, time.Now())
		}
	})
}

// Heartbeat keeps a member's session alive; the error tells it to rejoin
// or that it was fenced.
func (c *Coordinator) Heartbeat(groupID, memberID, instanceID string, generation int32) error {
	if groupID == "" {
		return kerr.InvalidGroupID
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	g, err := c.groupLocked(groupID, false)
	switch {
	case err != nil:
		return err
	case g == nil:
		return kerr.UnknownMemberID
	}
	return g.Heartbeat(memberID, instanceID, generation, time.Now())
}

// Leave removes members from a group: the group's error, or one error
// per member.
func (c *Coordinator) Leave(groupID string, members []group.LeaveMember) ([]error, error) {
	if groupID == "" {
		return nil, kerr.InvalidGroupID
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	g, err := c.groupLocked(groupID, false)
	switch {
	case err != nil:
		return nil, err
	case g == nil:
		errs := make([]error, len(members))
		for i := range errs {
			errs[i] = kerr.UnknownMemberID
		}
		return errs, nil
	}
	return g.Leave(members, time.Now()), nil
}

// GroupSummary is a group as DescribeGroups shows it.
type GroupSummary struct {
	State        string
	ProtocolType string
	// Protocol, and the members' Metadata and Assignment, are shown only
	// when the group is Stable, as Kafka does.
	Protocol string
	Members  []MemberSummary
}

type MemberSummary struct {
	ID, InstanceID       string
	ClientID, ClientHost string
	Metadata, Assignment []byte
}

// Describe summarises a group. An unknown group is Dead, without error.
func (c *Coordinator) Describe(groupID string) (GroupSummary, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g, err := c.groupLocked(groupID, false)
	switch {
	case err != nil:
		return GroupSummary{}, err
	case g == nil || g.State() == group.Dead:
		return GroupSummary{State: group.Dead.String()}, &group.Error{Err: kerr.GroupIDNotFound, Msg: "group " + groupID + " not found"}
	}
	if g.Consumer() != nil {
		return GroupSummary{State: group.Dead.String()}, &group.Error{Err: kerr.GroupIDNotFound, Msg: "group " + groupID + " is not a classic group"}
	}
	s := GroupSummary{State: g.State().String(), ProtocolType: g.ProtocolType()}
	stable := g.State() == group.Stable
	if stable {
		s.Protocol = g.Protocol()
	}
	for _, m := range g.Members() {
		ms := MemberSummary{ID: m.ID, InstanceID: m.InstanceID, ClientID: m.ClientID, ClientHost: m.ClientHost}
		if stable {
			ms.Metadata = m.Metadata(g.Protocol())
			ms.Assignment = m.Assignment
		}
		s.Members = append(s.Members, ms)
	}
	return s, nil
}

// GroupOverview is a group as ListGroups shows it.
type GroupOverview struct {
	ID, ProtocolType, State, Type string
}

// List returns the groups this broker coordinates (loaded ones, not
// Dead), by id.
func (c *Coordinator) List() []GroupOverview {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]GroupOverview, 0, len(c.mu.groups))
	for _, id := range slices.Sorted(maps.Keys(c.mu.groups)) {
		g := c.mu.groups[id]
		if g.State() == group.Dead {
			continue
		}
		out = append(out, GroupOverview{ID: id, ProtocolType: g.ProtocolType(), State: g.StateName(), Type: g.Type()})
	}
	return out
}

// DeleteGroups deletes groups without members: each becomes Dead at once
// and tombstones for its offsets and its metadata are written. done gets
// one error per id once every write is replicated (or failed); it may
// run before DeleteGroups returns.
func (c *Coordinator) DeleteGroups(ids []string, done func([]error)) {
	errs := make([]error, len(ids))
	type write struct {
		idx  int
		p    int32
		recs []record.Record
	}
	var writes []write
	now := time.Now()
	c.mu.Lock()
	for i, id := range ids {
		if id == "" {
			errs[i] = kerr.InvalidGroupID
			continue
		}
		g, err := c.groupLocked(id, false)
		switch {
		case err != nil:
			errs[i] = err
			continue
		case g == nil || g.State() == group.Dead:
			errs[i] = kerr.GroupIDNotFound
			continue
		case g.State() != group.Empty:
			errs[i] = kerr.NonEmptyGroup
			continue
		}
		var recs []record.Record
		for tp := range g.Offsets {
			recs = append(recs, record.Record{Key: group.OffsetKey(id, tp)})
		}
		if g.Consumer() != nil {
			recs = append(recs, kvRecords(group.ConsumerTombstones(id))...)
		} else {
			recs = append(recs, record.Record{Key: group.GroupKey(id)})
		}
		g.MarkDead(now)
		delete(c.mu.groups, id)
		writes = append(writes, write{idx: i, p: c.PartitionFor(id), recs: recs})
	}
	c.mu.Unlock()
	if len(writes) == 0 {
		done(errs)
		return
	}
	var mu sync.Mutex // guards errs and left against the writes' completions
	left := len(writes)
	for _, w := range writes {
		c.store(w.p, w.recs, func(err error) {
			mu.Lock()
			defer mu.Unlock()
			errs[w.idx] = err
			if left--; left == 0 {
				done(errs)
			}
		})
	}
}
