package group

// A Group of type consumer (KIP-848): the classic fields stay unused and
// the Consumer does the membership; offsets, deletion and expiry are the
// Group's as for classic groups. The Group's State is Empty without
// members and Stable with some, so the coordinator's checks (deletion,
// offset expiry, simple commits) treat both types alike; StateName gives
// the consumer group state Kafka shows.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Group types as ListGroups shows them.
const (
	TypeClassic  = "classic"
	TypeConsumer = "consumer"
)

// NewConsumerGroup returns an empty consumer group.
func NewConsumerGroup(id string, cfg ConsumerConfig, now time.Time) *Group {
	g := New(id, 0, now)
	g.consumer = newConsumer(id, cfg)
	g.protocolType = "consumer"
	return g
}

// RestoreConsumer rebuilds a consumer group from its loaded records.
func RestoreConsumer(id string, s *ConsumerSnapshot, offsets map[TopicPartition]Offset, cfg ConsumerConfig, now time.Time) *Group {
	g := NewConsumerGroup(id, cfg, now)
	if offsets != nil {
		g.Offsets = offsets
	}
	g.consumer = restoreConsumer(id, s, cfg, now)
	g.SyncConsumerState(now)
	return g
}

// Consumer returns the KIP-848 state of a consumer group, nil for a
// classic group.
func (g *Group) Consumer() *Consumer { return g.consumer }

// Type is the group's type: classic or consumer.
func (g *Group) Type() string {
	if g.consumer != nil {
		return TypeConsumer
	}
	return TypeClassic
}

// StateName is the state as DescribeGroups, ListGroups and
// ConsumerGroupDescribe show it.
func (g *Group) StateName() string {
	if g.consumer != nil && g.state != Dead {
		return g.consumer.ConsumerState()
	}
	return g.state.String()
}

// SyncConsumerState makes the Group's state follow its consumer members
// (Empty when the last one left, which starts the offsets' retention).
func (g *Group) SyncConsumerState(now time.Time) {
	if g.consumer == nil || g.state == Dead {
		return
	}
	switch n := len(g.consumer.members); {
	case n == 0 && g.state != Empty:
		g.transition(Empty, now)
	case n > 0 && g.state != Stable:
		g.transition(Stable, now)
	}
}

// ConvertToConsumer makes an Empty classic group a consumer group (its
// offsets stay), as Kafka does when a ConsumerGroupHeartbeat joins it.
func (g *Group) ConvertToConsumer(cfg ConsumerConfig, now time.Time) error {
	if g.consumer != nil {
		return nil
	}
	if g.state != Empty || len(g.members) > 0 {
		return kerr.GroupIDNotFound
	}
	g.consumer = newConsumer(g.ID, cfg)
	g.protocolType, g.protocol, g.leader, g.generation = "consumer", "", "", 0
	g.transition(Empty, now)
	return nil
}

// ConvertToClassic makes an empty consumer group a classic group again, as
// Kafka does when a JoinGroup comes for it.
func (g *Group) ConvertToClassic(now time.Time) error {
	if g.consumer == nil {
		return nil
	}
	if len(g.consumer.members) > 0 {
		return kerr.InconsistentGroupProtocol
	}
	g.consumer = nil
	g.protocolType = ""
	g.transition(Empty, now)
	return nil
}
