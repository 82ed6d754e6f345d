package group

// The consumer group (KIP-848) records of __consumer_offsets, in Kafka's
// schemas (group-coordinator/src/main/resources/common/message/
// ConsumerGroup*.json). kmsg has no types for them, so they are encoded
// here. Keys are not flexible: int16 version, then the fields; values are
// flexible (compact strings and arrays, tagged fields), version 0:
//
//	key v3  ConsumerGroupMetadata               value: group epoch
//	key v4  ConsumerGroupPartitionMetadata      (read and ignored; the
//	                                            subscription metadata is
//	                                            recomputed from the image)
//	key v5  ConsumerGroupMemberMetadata         value: the member's subscription
//	key v6  ConsumerGroupTargetAssignmentMetadata value: assignment epoch
//	key v7  ConsumerGroupTargetAssignmentMember value: target partitions
//	key v8  ConsumerGroupCurrentMemberAssignment value: epochs, state, partitions
//
// A null value is a tombstone.

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
)

// Key versions of the consumer group records.
const (
	keyConsumerGroupMetadata       int16 = 3
	keyConsumerPartitionMetadata   int16 = 4
	keyConsumerMemberMetadata      int16 = 5
	keyConsumerTargetMetadata      int16 = 6
	keyConsumerTargetMember        int16 = 7
	keyConsumerCurrentAssignment   int16 = 8
	maxConsumerRecordArrayElements       = 1 << 20
)

// KV is one record to write (Value nil: a tombstone).
type KV struct{ Key, Value []byte }

func groupKeyV(version int16, group string) []byte {
	return kbin.AppendString(kbin.AppendInt16(nil, version), group)
}

func memberKeyV(version int16, group, member string) []byte {
	return kbin.AppendString(groupKeyV(version, group), member)
}

func appendAssignment(dst []byte, a Assignment) []byte {
	ids := slices.SortedFunc(maps.Keys(a), func(x, y TopicID) int { return compareIDs(x, y) })
	n := 0
	for _, id := range ids {
		if len(a[id]) > 0 {
			n++
		}
	}
	dst = kbin.AppendCompactArrayLen(dst, n)
	for _, id := range ids {
		if len(a[id]) == 0 {
			continue
		}
		dst = kbin.AppendUuid(dst, id)
		dst = kbin.AppendCompactArrayLen(dst, len(a[id]))
		for _, p := range a[id] {
			dst = kbin.AppendInt32(dst, p)
		}
		dst = kbin.AppendUvarint(dst, 0) // tagged fields
	}
	return dst
}

func compareIDs(x, y TopicID) int {
	for i := range x {
		if x[i] != y[i] {
			return int(x[i]) - int(y[i])
		}
	}
	return 0
}

func readTags(r *kbin.Reader) {
	for n := r.Uvarint(); n > 0 && r.Ok(); n-- {
		r.Uvarint()
		r.Span(int(r.Uvarint()))
	}
}

// readLen reads a compact array length, refusing one the bytes left cannot
// hold (no allocation is sized by it).
func readLen(r *kbin.Reader) int {
	n := r.CompactArrayLen()
	if n < 0 || n > maxConsumerRecordArrayElements {
		return 0
	}
	return int(n)
}

func readAssignment(r *kbin.Reader) Assignment {
	a := Assignment{}
	for range readLen(r) {
		id := r.Uuid()
		var ps []int32
		for range readLen(r) {
			ps = append(ps, r.Int32())
		}
		readTags(r)
		if !r.Ok() {
			break
		}
		slices.Sort(ps)
		a[id] = slices.Compact(ps)
	}
	return a
}

func memberMetadataValue(m *ConsumerMember) []byte {
	v := kbin.AppendInt16(nil, 0)
	v = kbin.AppendCompactNullableString(v, optString(m.InstanceID))
	v = kbin.AppendCompactNullableString(v, optString(m.RackID))
	v = kbin.AppendCompactString(v, m.ClientID)
	v = kbin.AppendCompactString(v, m.ClientHost)
	v = kbin.AppendCompactArrayLen(v, len(m.SubscribedTopics))
	for _, t := range m.SubscribedTopics {
		v = kbin.AppendCompactString(v, t)
	}
	v = kbin.AppendCompactNullableString(v, optString(m.SubscribedRegex))
	v = kbin.AppendInt32(v, int32(m.RebalanceTimeout.Milliseconds()))
	v = kbin.AppendCompactNullableString(v, optString(m.ServerAssignor))
	return kbin.AppendUvarint(v, 0)
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func currentAssignmentValue(m *ConsumerMember) []byte {
	v := kbin.AppendInt16(nil, 0)
	v = kbin.AppendInt32(v, m.Epoch)
	v = kbin.AppendInt32(v, m.PreviousEpoch)
	v = kbin.AppendInt8(v, int8(m.State))
	v = appendAssignment(v, m.Assigned)
	v = appendAssignment(v, m.PendingRevocation)
	return kbin.AppendUvarint(v, 0)
}

func epochValue(epoch int32) []byte {
	return kbin.AppendUvarint(kbin.AppendInt32(kbin.AppendInt16(nil, 0), epoch), 0)
}

func targetMemberValue(a Assignment) []byte {
	return kbin.AppendUvarint(appendAssignment(kbin.AppendInt16(nil, 0), a), 0)
}

// TakeRecords returns the records of what changed since the last call,
// in the order Kafka writes them, and forgets the changes.
func (c *Consumer) TakeRecords() []KV {
	var out []KV
	g := c.groupID
	for _, id := range slices.Sorted(maps.Keys(c.changes.removed)) {
		if _, back := c.members[id]; back {
			continue
		}
		out = append(out,
			KV{Key: memberKeyV(keyConsumerCurrentAssignment, g, id)},
			KV{Key: memberKeyV(keyConsumerTargetMember, g, id)},
			KV{Key: memberKeyV(keyConsumerMemberMetadata, g, id)})
	}
	for _, id := range slices.Sorted(maps.Keys(c.changes.memberMeta)) {
		if m, ok := c.members[id]; ok {
			out = append(out, KV{memberKeyV(keyConsumerMemberMetadata, g, id), memberMetadataValue(m)})
		}
	}
	if c.changes.groupEpoch {
		out = append(out, KV{groupKeyV(keyConsumerGroupMetadata, g), epochValue(c.GroupEpoch)})
	}
	for _, id := range slices.Sorted(maps.Keys(c.changes.target)) {
		if t, ok := c.target[id]; ok {
			out = append(out, KV{memberKeyV(keyConsumerTargetMember, g, id), targetMemberValue(t)})
		}
	}
	if c.changes.targetEpoch {
		out = append(out, KV{groupKeyV(keyConsumerTargetMetadata, g), epochValue(c.AssignmentEpoch)})
	}
	for _, id := range slices.Sorted(maps.Keys(c.changes.current)) {
		if m, ok := c.members[id]; ok {
			out = append(out, KV{memberKeyV(keyConsumerCurrentAssignment, g, id), currentAssignmentValue(m)})
		}
	}
	c.changes.reset()
	return out
}

// MarkAllDirty makes the next TakeRecords write the whole group (after a
// write failed, so the log catches up with memory).
func (c *Consumer) MarkAllDirty() {
	for id := range c.members {
		c.changes.memberMeta[id] = true
		c.changes.current[id] = true
		if _, ok := c.target[id]; ok {
			c.changes.target[id] = true
		}
	}
	c.changes.groupEpoch, c.changes.targetEpoch = true, true
}

// ConsumerTombstones are the records deleting an empty consumer group.
func ConsumerTombstones(group string) []KV {
	return []KV{
		{Key: groupKeyV(keyConsumerTargetMetadata, group)},
		{Key: groupKeyV(keyConsumerPartitionMetadata, group)},
		{Key: groupKeyV(keyConsumerGroupMetadata, group)},
	}
}

// ConsumerSnapshot is a consumer group as its records in the log say.
type ConsumerSnapshot struct {
	GroupEpoch      int32
	AssignmentEpoch int32
	Members         map[string]*ConsumerMember // metadata only
	Current         map[string]*ConsumerMember // epochs, state, partitions
	Targets         map[string]Assignment
}

// NewConsumerSnapshot returns an empty snapshot.
func NewConsumerSnapshot() *ConsumerSnapshot {
	return &ConsumerSnapshot{Members: map[string]*ConsumerMember{}, Current: map[string]*ConsumerMember{}, Targets: map[string]Assignment{}}
}

// ConsumerRecord is a decoded consumer group record.
type ConsumerRecord struct {
	KeyVersion int16
	Group      string
	Member     string
	Tombstone  bool
	value      []byte
}

// IsGroupTombstone reports whether the record deletes the group.
func (r *ConsumerRecord) IsGroupTombstone() bool {
	return r.Tombstone && r.KeyVersion == keyConsumerGroupMetadata
}

var errBadConsumerRecord = errors.New("group: malformed consumer group record")

func decodeConsumerKey(version int16, key, value []byte) (*ConsumerRecord, error) {
	r := kbin.Reader{Src: key[2:]}
	rec := &ConsumerRecord{KeyVersion: version, Group: r.String(), Tombstone: value == nil, value: value}
	switch version {
	case keyConsumerMemberMetadata, keyConsumerTargetMember, keyConsumerCurrentAssignment:
		rec.Member = r.String()
	}
	if err := r.Complete(); err != nil {
		return nil, fmt.Errorf("%w: key version %d: %w", errBadConsumerRecord, version, err)
	}
	return rec, nil
}

// Apply folds the record into the snapshot.
func (s *ConsumerSnapshot) Apply(rec *ConsumerRecord) error {
	if rec.Tombstone {
		switch rec.KeyVersion {
		case keyConsumerMemberMetadata:
			delete(s.Members, rec.Member)
		case keyConsumerTargetMember:
			delete(s.Targets, rec.Member)
		case keyConsumerCurrentAssignment:
			delete(s.Current, rec.Member)
		}
		return nil
	}
	if len(rec.value) < 2 {
		return errBadConsumerRecord
	}
	r := kbin.Reader{Src: rec.value[2:]}
	switch rec.KeyVersion {
	case keyConsumerGroupMetadata:
		s.GroupEpoch = r.Int32()
	case keyConsumerTargetMetadata:
		s.AssignmentEpoch = r.Int32()
	case keyConsumerPartitionMetadata:
		return nil
	case keyConsumerMemberMetadata:
		m := &ConsumerMember{ID: rec.Member}
		m.InstanceID = deref(r.CompactNullableString())
		m.RackID = deref(r.CompactNullableString())
		m.ClientID = r.CompactString()
		m.ClientHost = r.CompactString()
		for range readLen(&r) {
			m.SubscribedTopics = append(m.SubscribedTopics, r.CompactString())
		}
		m.SubscribedRegex = deref(r.CompactNullableString())
		m.RebalanceTimeout = time.Duration(r.Int32()) * time.Millisecond
		m.ServerAssignor = deref(r.CompactNullableString())
		if !r.Ok() {
			return errBadConsumerRecord
		}
		s.Members[rec.Member] = m
		return nil
	case keyConsumerTargetMember:
		a := readAssignment(&r)
		if !r.Ok() {
			return errBadConsumerRecord
		}
		s.Targets[rec.Member] = a
		return nil
	case keyConsumerCurrentAssignment:
		m := &ConsumerMember{ID: rec.Member}
		m.Epoch = r.Int32()
		m.PreviousEpoch = r.Int32()
		m.State = MemberState(r.Int8())
		m.Assigned = readAssignment(&r)
		m.PendingRevocation = readAssignment(&r)
		if !r.Ok() {
			return errBadConsumerRecord
		}
		s.Current[rec.Member] = m
		return nil
	}
	if !r.Ok() {
		return errBadConsumerRecord
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// restoreConsumer rebuilds a consumer group from its snapshot; members get
// a fresh session from now.
func restoreConsumer(id string, s *ConsumerSnapshot, cfg ConsumerConfig, now time.Time) *Consumer {
	c := newConsumer(id, cfg)
	c.GroupEpoch, c.AssignmentEpoch = s.GroupEpoch, s.AssignmentEpoch
	for mid, meta := range s.Members {
		m := *meta
		m.Assigned, m.PendingRevocation = Assignment{}, Assignment{}
		if cur, ok := s.Current[mid]; ok {
			m.Epoch, m.PreviousEpoch, m.State = cur.Epoch, cur.PreviousEpoch, cur.State
			m.Assigned, m.PendingRevocation = cur.Assigned, cur.PendingRevocation
		}
		m.sessionDeadline = now.Add(cfg.SessionTimeout)
		m.revokeDeadline = now.Add(max(m.RebalanceTimeout, time.Millisecond))
		c.members[mid] = &m
		if m.InstanceID != "" {
			c.static[m.InstanceID] = mid
		}
		if t, ok := s.Targets[mid]; ok {
			c.target[mid] = t
		}
	}
	// The subscription metadata is not stored: the first refresh
	// recomputes it without bumping the epoch (nil: unknown).
	c.subscribed = nil
	return c
}
