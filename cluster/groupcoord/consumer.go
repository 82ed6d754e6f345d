package groupcoord

// The coordinator's side of consumer (KIP-848) groups: ConsumerGroupHeartbeat
// and ConsumerGroupDescribe. The reconciliation is package group's
// (group/consumer.go); here a heartbeat is routed to its group under the
// lock, the records it produced are written to the group's partition of
// __consumer_offsets after the lock is released, and the answer goes out
// once they are replicated, as Kafka answers after its records are
// committed. A write that fails makes the group write all of itself with
// its next change, so the log catches up with memory.

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/cluster/group"
	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/wire/record"
)

// consumerDefaults fills Kafka's defaults into an unset configuration.
func consumerDefaults(cfg group.ConsumerConfig) group.ConsumerConfig {
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 45 * time.Second
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = 5 * time.Second
	}
	if len(cfg.Assignors) == 0 {
		cfg.Assignors = []string{"uniform", "range"}
	}
	return cfg
}

func kvRecords(kvs []group.KV) []record.Record {
	out := make([]record.Record, len(kvs))
	for i, kv := range kvs {
		out[i] = record.Record{Key: kv.Key, Value: kv.Value}
	}
	return out
}

// imageTopics is the image's topics as consumer groups see them.
func imageTopics(img *metadata.Image) group.Topics {
	out := make(group.Topics, len(img.Topics))
	for name, t := range img.Topics {
		out[name] = group.TopicInfo{Name: name, ID: t.ID, Partitions: int32(len(t.Partitions))}
	}
	return out
}

// imageTopicsLocked is imageTopics(img), built once per image: every
// heartbeat of every consumer asks for it, and building it is a pass over
// every topic.
func (c *Coordinator) imageTopicsLocked(img *metadata.Image) group.Topics {
	if img != c.mu.topicsImage {
		c.mu.topicsImage, c.mu.topics = img, imageTopics(img)
	}
	return c.mu.topics
}

// refreshConsumerMetadataLocked lets the consumer groups see a new
// metadata image: a subscribed topic that changed bumps the group epoch.
func (c *Coordinator) refreshConsumerMetadataLocked() {
	img := c.host.Image()
	if img == c.mu.lastImage {
		return
	}
	c.mu.lastImage = img
	var topics group.Topics
	for _, g := range c.mu.groups {
		if cg := g.Consumer(); cg != nil {
			if topics == nil {
				topics = c.imageTopicsLocked(img)
			}
			cg.RefreshMetadata(topics)
		}
	}
}

// consumerWriteFailed makes a consumer group write all of itself next
// time.
func (c *Coordinator) consumerWriteFailed(g *group.Group) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.isCurrentLocked(g) && g.Consumer() != nil {
		g.Consumer().MarkAllDirty()
	}
}

// consumerGroupLocked finds the consumer group of a heartbeat. join
// (epoch 0) creates it, or converts an empty classic group (whose
// metadata tombstone is then returned to write first).
func (c *Coordinator) consumerGroupLocked(id string, join bool, now time.Time) (*group.Group, []record.Record, error) {
	g, err := c.groupLocked(id, false)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case g == nil && !join:
		return nil, nil, &group.Error{Err: kerr.GroupIDNotFound, Msg: fmt.Sprintf("consumer group %s not found", id)}
	case g == nil:
		g = group.NewConsumerGroup(id, c.cfg.Consumer, now)
		c.mu.groups[id] = g
		return g, nil, nil
	case g.Consumer() != nil:
		return g, nil, nil
	case join && g.State() == group.Empty:
		if err := g.ConvertToConsumer(c.cfg.Consumer, now); err != nil {
			return nil, nil, err
		}
		c.logger.Info("converted empty classic group to a consumer group", "group", id)
		return g, []record.Record{{Key: group.GroupKey(id)}}, nil
	}
	return nil, nil, &group.Error{Err: kerr.GroupIDNotFound, Msg: fmt.Sprintf("group %s is not a consumer group", id)}
}

// ConsumerHeartbeat handles a ConsumerGroupHeartbeat. respond is called
// exactly once, possibly after the heartbeat's records are replicated.
func (c *Coordinator) ConsumerHeartbeat(groupID string, req group.ConsumerHeartbeat, respond func(group.ConsumerResult, time.Duration, error)) {
	if groupID == "" {
		respond(group.ConsumerResult{}, 0, &group.Error{Err: kerr.InvalidRequest, Msg: "GroupId can't be empty."})
		return
	}
	now := time.Now()
	c.mu.Lock()
	g, pre, err := c.consumerGroupLocked(groupID, req.MemberEpoch == 0, now)
	if err != nil {
		c.mu.Unlock()
		respond(group.ConsumerResult{}, 0, err)
		return
	}
	cg := g.Consumer()
	res, err := cg.Heartbeat(req, c.imageTopicsLocked(c.host.Image()), now)
	if err != nil && cg.GroupEpoch == 0 && len(g.Offsets) == 0 && pre == nil {
		// A group this refused join created: it never existed.
		delete(c.mu.groups, groupID)
	}
	g.SyncConsumerState(now)
	interval := cg.HeartbeatInterval()
	recs := append(pre, kvRecords(cg.TakeRecords())...)
	p := c.PartitionFor(groupID)
	c.mu.Unlock()
	if len(recs) == 0 {
		respond(res, interval, err)
		return
	}
	c.store(p, recs, func(werr error) {
		if werr != nil {
			c.consumerWriteFailed(g)
			respond(group.ConsumerResult{}, 0, werr)
			return
		}
		respond(res, interval, err)
	})
}

// ConsumerDescription is a consumer group as ConsumerGroupDescribe shows
// it.
type ConsumerDescription struct {
	State           string
	Epoch           int32
	AssignmentEpoch int32
	Assignor        string
	Members         []ConsumerMemberDescription
}

type ConsumerMemberDescription struct {
	group.ConsumerMember
	Target group.Assignment
}

// DescribeConsumer describes a consumer group (GROUP_ID_NOT_FOUND for an
// unknown or classic group, as Kafka).
func (c *Coordinator) DescribeConsumer(groupID string) (ConsumerDescription, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g, err := c.groupLocked(groupID, false)
	switch {
	case err != nil:
		return ConsumerDescription{}, err
	case g == nil || g.State() == group.Dead:
		return ConsumerDescription{}, &group.Error{Err: kerr.GroupIDNotFound, Msg: fmt.Sprintf("group %s not found", groupID)}
	case g.Consumer() == nil:
		return ConsumerDescription{}, &group.Error{Err: kerr.GroupIDNotFound, Msg: fmt.Sprintf("group %s is not a consumer group", groupID)}
	}
	cg := g.Consumer()
	d := ConsumerDescription{State: cg.ConsumerState(), Epoch: cg.GroupEpoch, AssignmentEpoch: cg.AssignmentEpoch, Assignor: cg.AssignorName()}
	for _, m := range cg.Members() {
		md := ConsumerMemberDescription{ConsumerMember: *m, Target: cg.Target(m.ID).Clone()}
		md.Assigned = m.Assigned.Clone()
		d.Members = append(d.Members, md)
	}
	return d, nil
}
