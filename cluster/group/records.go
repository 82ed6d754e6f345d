package group

// The records of __consumer_offsets, in Kafka's schemas (kmsg's
// generated types):
//
//	offset commit:  key   OffsetCommitKey v1   (version int16, group, topic, partition)
//	                value OffsetCommitValue v3 (offset, leader epoch, metadata, commit timestamp)
//	group metadata: key   GroupMetadataKey v2  (version int16, group)
//	                value GroupMetadataValue v3 (protocol type, generation, protocol,
//	                      leader, state timestamp, members)
//
// A null value is a tombstone: the offset or the group is deleted. The key
// version tells the two kinds apart (0 and 1: offset, 2: group), as
// Kafka's GroupMetadataManager.readMessageKey does.

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrUnknownRecord is a record of __consumer_offsets whose key version is
// not an offset or group key (Kafka 4's new coordinator records, say).
var ErrUnknownRecord = errors.New("group: unknown __consumer_offsets record")

// OffsetKey encodes the key of an offset commit record.
func OffsetKey(group string, tp TopicPartition) []byte {
	k := kmsg.OffsetCommitKey{Version: 1, Group: group, Topic: tp.Topic, Partition: tp.Partition}
	return k.AppendTo(nil)
}

// OffsetValue encodes the value of an offset commit record.
func OffsetValue(o Offset) []byte {
	v := kmsg.NewOffsetCommitValue()
	v.Version = 3
	v.Offset = o.Offset
	v.LeaderEpoch = o.LeaderEpoch
	v.Metadata = o.Metadata
	v.CommitTimestamp = o.CommitTimestamp
	return v.AppendTo(nil)
}

// GroupKey encodes the key of a group metadata record.
func GroupKey(group string) []byte {
	k := kmsg.GroupMetadataKey{Version: 2, Group: group}
	return k.AppendTo(nil)
}

// MetadataValue encodes the group's metadata record value.
func (g *Group) MetadataValue() []byte {
	v := kmsg.NewGroupMetadataValue()
	v.Version = 3
	v.ProtocolType = g.protocolType
	v.Generation = g.generation
	if g.protocol != "" {
		p := g.protocol
		v.Protocol = &p
	}
	if g.leader != "" {
		l := g.leader
		v.Leader = &l
	}
	v.CurrentStateTimestamp = g.stateTimestamp.UnixMilli()
	for _, m := range g.Members() {
		vm := kmsg.NewGroupMetadataValueMember()
		vm.MemberID = m.ID
		if m.InstanceID != "" {
			id := m.InstanceID
			vm.InstanceID = &id
		}
		vm.ClientID, vm.ClientHost = m.ClientID, m.ClientHost
		vm.RebalanceTimeoutMillis = int32(m.RebalanceTimeout.Milliseconds())
		vm.SessionTimeoutMillis = int32(m.SessionTimeout.Milliseconds())
		vm.Subscription = m.Metadata(g.protocol)
		vm.Assignment = m.Assignment
		v.Members = append(v.Members, vm)
	}
	return v.AppendTo(nil)
}

// Entry is one decoded record of __consumer_offsets.
type Entry struct {
	Group string
	// IsOffset: an offset commit of TP; otherwise group metadata.
	IsOffset bool
	TP       TopicPartition
	// Tombstone: the value was null.
	Tombstone bool
	Offset    Offset
	Metadata  kmsg.GroupMetadataValue
	// Consumer is set for a consumer group (KIP-848) record.
	Consumer *ConsumerRecord
}

// Decode decodes one record of __consumer_offsets.
func Decode(key, value []byte) (Entry, error) {
	if len(key) < 2 {
		return Entry{}, fmt.Errorf("%w: key of %d bytes", ErrUnknownRecord, len(key))
	}
	version := int16(key[0])<<8 | int16(key[1])
	var e Entry
	switch version {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(key); err != nil {
			return Entry{}, fmt.Errorf("offset key: %w", err)
		}
		e = Entry{Group: k.Group, IsOffset: true, TP: TopicPartition{k.Topic, k.Partition}}
		if value == nil {
			e.Tombstone = true
			return e, nil
		}
		var v kmsg.OffsetCommitValue
		if err := v.ReadFrom(value); err != nil {
			return Entry{}, fmt.Errorf("offset value: %w", err)
		}
		e.Offset = Offset{Offset: v.Offset, LeaderEpoch: v.LeaderEpoch, Metadata: v.Metadata, CommitTimestamp: v.CommitTimestamp}
		if v.Version < 3 {
			e.Offset.LeaderEpoch = -1
		}
		return e, nil
	case 2:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(key); err != nil {
			return Entry{}, fmt.Errorf("group key: %w", err)
		}
		e = Entry{Group: k.Group}
		if value == nil {
			e.Tombstone = true
			return e, nil
		}
		if err := e.Metadata.ReadFrom(value); err != nil {
			return Entry{}, fmt.Errorf("group value: %w", err)
		}
		return e, nil
	}
	if version >= keyConsumerGroupMetadata && version <= keyConsumerCurrentAssignment {
		rec, err := decodeConsumerKey(version, key, value)
		if err != nil {
			return Entry{}, err
		}
		return Entry{Group: rec.Group, Tombstone: rec.Tombstone, Consumer: rec}, nil
	}
	return Entry{}, fmt.Errorf("%w: key version %d", ErrUnknownRecord, version)
}

// Restore rebuilds a group from its loaded metadata record (nil: a group
// with offsets only) and offsets. A group with members comes back Stable,
// each member with a fresh session from now; members that are gone expire.
func Restore(id string, md *kmsg.GroupMetadataValue, offsets map[TopicPartition]Offset, initialDelay time.Duration, now time.Time) *Group {
	g := New(id, initialDelay, now)
	if offsets != nil {
		g.Offsets = offsets
	}
	if md == nil {
		return g
	}
	g.protocolType = md.ProtocolType
	g.generation = md.Generation
	if md.Protocol != nil {
		g.protocol = *md.Protocol
	}
	if md.CurrentStateTimestamp > 0 {
		g.stateTimestamp = time.UnixMilli(md.CurrentStateTimestamp)
	}
	if len(md.Members) == 0 {
		return g
	}
	if md.Leader != nil {
		g.leader = *md.Leader
	}
	for _, vm := range md.Members {
		m := &Member{
			ID: vm.MemberID, ClientID: vm.ClientID, ClientHost: vm.ClientHost,
			ProtocolType:      md.ProtocolType,
			Protocols:         []Protocol{{Name: g.protocol, Metadata: vm.Subscription}},
			SessionTimeout:    time.Duration(vm.SessionTimeoutMillis) * time.Millisecond,
			RebalanceTimeout:  time.Duration(vm.RebalanceTimeoutMillis) * time.Millisecond,
			Assignment:        vm.Assignment,
			heartbeatDeadline: now.Add(time.Duration(vm.SessionTimeoutMillis) * time.Millisecond),
		}
		if m.RebalanceTimeout <= 0 {
			m.RebalanceTimeout = m.SessionTimeout
		}
		if vm.InstanceID != nil {
			m.InstanceID = *vm.InstanceID
			g.static[m.InstanceID] = m.ID
		}
		g.members[m.ID] = m
		g.order = append(g.order, m.ID)
	}
	if _, ok := g.members[g.leader]; !ok {
		g.leader = g.order[0]
	}
	g.state = Stable
	return g
}
