package cluster

// OffsetCommit (key 8).
//
// Offsets are written to the group's __consumer_offsets partition (one
// batch per request, OffsetCommitKey v1 / OffsetCommitValue v3) and the
// response is sent once the batch is replicated, with errors per
// partition as Kafka maps them: NOT_COORDINATOR when leadership moved,
// COORDINATOR_NOT_AVAILABLE when the ISR is too small or replication timed
// out (offsets.commit.timeout.ms, 5s). Members of a group commit with
// their generation and member id (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
// FENCED_INSTANCE_ID, REBALANCE_IN_PROGRESS otherwise); a simple consumer
// (generation -1, no member id) may commit to a group without members,
// which is created Empty if needed. The retention time of v2–4 is ignored
// (as Kafka 4 does); metadata longer than offset.metadata.max.bytes (4096)
// is OFFSET_METADATA_TOO_LARGE.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/group"
	"github.com/kbroker/kbroker/wire/record"
)

func init() {
	register(apiSpec{key: 8, min: 2, max: 9, handle: (*Node).handleOffsetCommit})
}

// offsetMetadataMaxBytes is offset.metadata.max.bytes' default.
const offsetMetadataMaxBytes = 4096

func (n *Node) handleOffsetCommit(_ context.Context, rc *RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.OffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	setAll := func(err error) {
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				if resp.Topics[i].Partitions[j].ErrorCode == 0 {
					resp.Topics[i].Partitions[j].ErrorCode = errorCode(err)
				}
			}
		}
	}
	if req.Group == "" {
		setAll(kerr.InvalidGroupID)
		return resp, nil
	}

	c := n.groups
	now := time.Now()
	c.mu.Lock()
	g, err := c.groupLocked(req.Group, req.Generation < 0)
	if err == nil && g == nil {
		err = kerr.IllegalGeneration
	}
	if err == nil {
		err = g.ValidateCommit(req.MemberID, deref(req.InstanceID), req.Generation, now)
	}
	if err != nil {
		c.mu.Unlock()
		setAll(err)
		return resp, nil
	}
	offsets := map[group.TopicPartition]group.Offset{}
	var recs []record.Record
	for i, t := range req.Topics {
		for j, p := range t.Partitions {
			md := deref(p.Metadata)
			if len(md) > offsetMetadataMaxBytes {
				resp.Topics[i].Partitions[j].ErrorCode = kerr.OffsetMetadataTooLarge.Code
				continue
			}
			tp := group.TopicPartition{Topic: t.Topic, Partition: p.Partition}
			o := group.Offset{Offset: p.Offset, LeaderEpoch: -1, Metadata: md, CommitTimestamp: now.UnixMilli()}
			if req.Version >= 6 {
				o.LeaderEpoch = p.LeaderEpoch
			}
			offsets[tp] = o
			recs = append(recs, record.Record{Key: group.OffsetKey(req.Group, tp), Value: group.OffsetValue(o)})
		}
	}
	p := c.partitionFor(req.Group)
	c.mu.Unlock()
	if len(recs) == 0 {
		return resp, nil
	}
	c.store(p, recs, func(err error) {
		c.mu.Lock()
		if err == nil {
			if cur := c.mu.groups[req.Group]; cur == g {
				g.CommitOffsets(offsets)
			}
		}
		c.mu.Unlock()
		if err != nil {
			setAll(err)
		}
		rc.Respond(resp)
	})
	return nil, nil
}
