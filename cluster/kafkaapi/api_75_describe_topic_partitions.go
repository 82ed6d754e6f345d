package kafkaapi

// DescribeTopicPartitions (key 75).
//
// Metadata's topic description (KIP-966) in pages, for clients describing
// clusters with many partitions: topics are taken in name order from the
// Cursor on (its topic from its partition), and a response describes at
// most ResponsePartitionLimit partitions, capped by
// max.request.partition.size.limit. When partitions remain, NextCursor
// names the first one left out; the client sends it back as Cursor.
//
// No topics asked for means every topic. A topic named in the request
// that does not exist is UNKNOWN_TOPIC_OR_PARTITION (or
// INVALID_TOPIC_EXCEPTION for an invalid name); a cursor whose topic is
// not among the requested ones, or whose partition is negative, is
// INVALID_REQUEST for every requested topic, as Kafka answers.
// EligibleLeaderReplicas and LastKnownElr are empty: kbroker does not keep
// eligible leader replicas (KIP-966's ELR).
//
// Authorization, as Metadata: DESCRIBE on each topic. A requested topic
// without it gets TOPIC_AUTHORIZATION_FAILED without its id, after the
// described ones; when every topic is asked for it is left out. Each
// described topic carries its authorized operations.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/metadata"
)

func init() {
	register(apiSpec{key: 75, min: 0, max: 0, handle: (*Handlers).handleDescribeTopicPartitions, actions: describeTopicPartitionsActions})
}

func describeTopicPartitionsActions(_ *server.RequestContext, kreq kmsg.Request) []server.Action {
	req := kreq.(*kmsg.DescribeTopicPartitionsRequest)
	return server.TopicActions(kmsg.ACLOperationDescribe, func(yield func(string)) {
		for _, t := range req.Topics {
			yield(t.Topic)
		}
	})
}

func (h *Handlers) handleDescribeTopicPartitions(_ context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeTopicPartitionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	h.describeTopicPartitions(rc, h.store.Image(), req, resp)
	return resp, nil
}

// describeTopicPartitions fills resp from img.
func (h *Handlers) describeTopicPartitions(rc *server.RequestContext, img *metadata.Image, req *kmsg.DescribeTopicPartitionsRequest, resp *kmsg.DescribeTopicPartitionsResponse) {
	all := len(req.Topics) == 0
	cursorTopic, cursorPartition := "", int32(0)
	if req.Cursor != nil {
		cursorTopic, cursorPartition = req.Cursor.Topic, req.Cursor.Partition
	}
	// The names from the cursor on. Every topic: a binary search in the
	// image's sorted names (shared, read only), so a page costs what it
	// describes, not a sort of every name.
	var names []string
	if all {
		sorted := img.SortedTopicNames()
		from, _ := slices.BinarySearch(sorted, cursorTopic)
		names = sorted[from:]
	} else {
		for _, t := range req.Topics {
			names = append(names, t.Topic)
		}
		slices.Sort(names)
		names = slices.Compact(names)
		names = slices.DeleteFunc(names, func(name string) bool { return name < cursorTopic })
	}
	if req.Cursor != nil && (!all && !slices.Contains(names, cursorTopic) || cursorPartition < 0) {
		for _, t := range req.Topics {
			rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
			rt.Topic = &t.Topic
			rt.ErrorCode = kerr.InvalidRequest.Code
			resp.Topics = append(resp.Topics, rt)
		}
		return
	}

	// Kafka's limit: what the client asks, at most the broker's cap,
	// at least one.
	remaining := max(min(req.ResponsePartitionLimit, h.cfg.MaxRequestPartitionSizeLimit), 1)
	var denied []kmsg.DescribeTopicPartitionsResponseTopic
	for _, name := range names {
		if !describeTopicAllowed(rc, name) {
			if !all {
				rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
				rt.Topic = &name
				rt.ErrorCode = kerr.TopicAuthorizationFailed.Code
				denied = append(denied, rt)
			}
			continue
		}
		if resp.NextCursor != nil {
			if all {
				break // denied topics are left out: nothing more to list
			}
			continue // only the denied ones are still listed
		}
		if remaining == 0 {
			// The previous topic ended the page exactly: the next
			// page starts with this one.
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: 0}
			continue
		}
		t := img.Topics[name]
		if t == nil {
			rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
			rt.Topic = &name
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			if metadata.ValidateTopicName(name) != nil {
				rt.ErrorCode = kerr.InvalidTopicException.Code
			}
			rt.IsInternal = isInternalTopic(name)
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		start := int32(0)
		if name == cursorTopic {
			start = cursorPartition
		}
		rt, next := h.describeTopicPartitionsPage(rc, img, t, start, &remaining)
		resp.Topics = append(resp.Topics, rt)
		if next >= 0 {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: next}
		}
	}
	resp.Topics = append(resp.Topics, denied...)
}

// describeTopicPartitionsPage describes t's partitions from start on, at
// most *remaining of them, which it counts down. next is the first
// partition left out, -1 if none.
func (h *Handlers) describeTopicPartitionsPage(rc *server.RequestContext, img *metadata.Image, t *metadata.Topic, start int32, remaining *int32) (rt kmsg.DescribeTopicPartitionsResponseTopic, next int32) {
	rt = kmsg.NewDescribeTopicPartitionsResponseTopic()
	name := t.Name
	rt.Topic = &name
	rt.TopicID = t.ID
	rt.IsInternal = isInternalTopic(t.Name)
	rt.AuthorizedOperations = rc.AuthorizedOperations(kmsg.ACLResourceTypeTopic, t.Name, topicOperations)
	// Only the partitions of this page are described (Partitions[i].ID
	// is i): a topic larger than a page costs each page its page, not
	// the whole topic.
	parts := t.Partitions[min(int(start), len(t.Partitions)):]
	rt.Partitions = make([]kmsg.DescribeTopicPartitionsResponseTopicPartition, 0, min(len(parts), int(*remaining)))
	lv := h.leaderLiveness(img)
	next = -1
	for _, tp := range parts {
		if *remaining == 0 {
			next = tp.ID
			break
		}
		mp := lv.metadataPartition(tp)
		p := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
		p.Partition = mp.Partition
		// Metadata's LEADER_NOT_AVAILABLE becomes leader -1: this API
		// has no per-partition error for it in Kafka.
		p.LeaderID, p.LeaderEpoch = mp.Leader, mp.LeaderEpoch
		if mp.ErrorCode != 0 {
			p.LeaderID = -1
		}
		p.Replicas, p.ISR, p.OfflineReplicas = mp.Replicas, mp.ISR, mp.OfflineReplicas
		p.EligibleLeaderReplicas, p.LastKnownELR = []int32{}, []int32{}
		rt.Partitions = append(rt.Partitions, p)
		*remaining--
	}
	return rt, next
}
