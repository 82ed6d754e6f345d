package kafkaapi

// ListOffsets (key 2).
//
// Timestamp -2 is the log start offset, -1 the high watermark, or the
// last stable offset for isolation level 1 (read_committed, v2+), -3 (v7)
// the offset of the record with the largest timestamp, and any other
// timestamp the first offset whose record timestamp is at least that.
// With remote storage (remote.storage.enable) -2 is the remote log's
// start when it starts earlier; -4 (v8, KIP-1005 earliest local) is the
// first offset on the leader's disk; -5 (v9, latest tiered) the last
// offset copied to remote storage, or -1 with epoch -1 when nothing is.
// Without remote storage -4 is the log start offset and -5 -1. A
// negative timestamp the request's version does not know is
// UNSUPPORTED_VERSION for the partition, as Kafka answers. Timestamp
// lookups search the local log only (not yet the remote one), so v10's
// TimeoutMillis has nothing to bound and every lookup is answered at once. Offsets are returned
// with the partition's current leader epoch (v4+), after the client's
// CurrentLeaderEpoch has been checked. Needs DESCRIBE on each topic
// (TOPIC_AUTHORIZATION_FAILED per partition).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/replication"
)

func init() {
	register(apiSpec{key: 2, min: 1, max: 10, handle: (*Handlers).handleListOffsets, actions: listOffsetsActions})
}

const (
	listLatest        = -1
	listEarliest      = -2
	listMaxTimestamp  = -3
	listEarliestLocal = -4
	listLatestTiered  = -5
)

// listSpecialMinVersion is the first version that knows each special
// (negative) timestamp, Kafka's table.
var listSpecialMinVersion = map[int64]int16{
	listLatest: 0, listEarliest: 0, listMaxTimestamp: 7, listEarliestLocal: 8, listLatestTiered: 9,
}

func listOffsetsActions(_ *server.RequestContext, kreq kmsg.Request) []server.Action {
	return server.TopicActions(kmsg.ACLOperationDescribe, func(yield func(string)) {
		for _, t := range kreq.(*kmsg.ListOffsetsRequest).Topics {
			yield(t.Topic)
		}
	})
}

func (h *Handlers) handleListOffsets(_ context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		authorized := rc.AuthorizedTopic(kmsg.ACLOperationDescribe, t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			rp.Timestamp, rp.Offset, rp.LeaderEpoch = -1, -1, -1
			if !authorized {
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			offset, ts, epoch, err := h.listOffset(replication.TopicPartition{Topic: t.Topic, Partition: p.Partition}, p.CurrentLeaderEpoch, p.Timestamp, req.Version, req.IsolationLevel == 1)
			if err != nil {
				rp.ErrorCode = errcode.Of(err)
			} else {
				rp.Offset, rp.Timestamp, rp.LeaderEpoch = offset, ts, epoch
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func (h *Handlers) listOffset(tp replication.TopicPartition, currentEpoch int32, timestamp int64, version int16, readCommitted bool) (offset, ts int64, epoch int32, err error) {
	part, err := h.hostedPartition(tp)
	if err != nil {
		return 0, 0, 0, err
	}
	if first, ok := listSpecialMinVersion[timestamp]; timestamp < 0 && (!ok || version < first) {
		return 0, 0, 0, kerr.UnsupportedVersion
	}
	// Kafka checks the client's leader epoch first: a stale client asking
	// a former leader learns FENCED_LEADER_EPOCH.
	if err := part.CheckLeaderEpoch(currentEpoch); err != nil {
		return 0, 0, 0, err
	}
	if !part.IsLeader() {
		return 0, 0, 0, replication.ErrNotLeader
	}
	epoch = part.State().LeaderEpoch
	switch {
	case timestamp == listLatest && readCommitted:
		return part.LastStableOffset(), -1, epoch, nil
	case timestamp == listLatest:
		return part.HighWatermark(), -1, epoch, nil
	case timestamp == listEarliest:
		// With remote storage, the remote log's start (replication remote.go).
		return part.LogStartOffset(), -1, epoch, nil
	case timestamp == listEarliestLocal:
		return part.LocalLogStartOffset(), -1, epoch, nil
	case timestamp == listLatestTiered:
		// The last offset copied to remote storage; -1 without any.
		if off := part.Log().RemoteCopiedOffset(); off >= 0 {
			return off, -1, epoch, nil
		}
		return -1, -1, -1, nil
	case timestamp == listMaxTimestamp:
		off, maxTS, found, err := part.Log().OffsetOfMaxTimestamp(part.HighWatermark())
		if err != nil || !found {
			return -1, -1, epoch, err
		}
		return off, maxTS, epoch, nil
	}
	off, foundTS, found, err := part.Log().OffsetForTimestamp(timestamp)
	if err != nil {
		return 0, 0, 0, err
	}
	if !found || off >= part.HighWatermark() {
		// No committed record that new: Kafka answers -1/-1.
		return -1, -1, epoch, nil
	}
	return off, foundTS, epoch, nil
}
