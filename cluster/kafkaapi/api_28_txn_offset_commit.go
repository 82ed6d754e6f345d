package kafkaapi

// TxnOffsetCommit (key 28).
//
// Offsets committed inside a transaction (consume-transform-produce). The
// group coordinator writes them with acks=all as the producer's
// transactional batch in the group's __consumer_offsets partition, which
// AddOffsetsToTxn added to the transaction, and applies them when the
// transaction's marker reaches that partition (groups_txn_offsets.go). A
// fenced producer epoch is PRODUCER_FENCED (INVALID_PRODUCER_EPOCH
// before v3). v3 carries the member and generation (KIP-447), checked as
// for OffsetCommit. v4 only allows TRANSACTION_ABORTABLE, which kbroker
// does not return; v5 is KIP-890 part 2's (no AddOffsetsToTxn first),
// served with transaction version 1 semantics as EndTxn documents: the
// group's partition must still have been added.
//
// Authorization, as Kafka: WRITE on the transactional id (else
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED), READ on the group (else
// GROUP_AUTHORIZATION_FAILED), READ on each topic (else
// TOPIC_AUTHORIZATION_FAILED for its partitions).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/group"
	"github.com/kbroker/kbroker/cluster/groupcoord"
	"github.com/kbroker/kbroker/cluster/server"
)

func init() {
	register(apiSpec{key: 28, min: 0, max: 5, handle: (*Handlers).handleTxnOffsetCommit, actions: txnOffsetCommitActions})
}

func txnOffsetCommitActions(_ *server.RequestContext, kreq kmsg.Request) []server.Action {
	req := kreq.(*kmsg.TxnOffsetCommitRequest)
	out := []server.Action{txnIDAction(req.TransactionalID),
		{Operation: kmsg.ACLOperationRead, ResourceType: kmsg.ACLResourceTypeGroup, Name: req.Group}}
	return append(out, server.TopicActions(kmsg.ACLOperationRead, func(yield func(string)) {
		for _, t := range req.Topics {
			yield(t.Topic)
		}
	})...)
}

func (h *Handlers) handleTxnOffsetCommit(_ context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.TxnOffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	var all error
	switch {
	case !rc.Authorized(kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, req.TransactionalID):
		all = kerr.TransactionalIDAuthorizationFailed
	case !rc.Authorized(kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, req.Group):
		all = kerr.GroupAuthorizationFailed
	}
	var offsets []groupcoord.PartitionOffset
	var slots []*int16 // the response's error code of each entry of offsets
	for _, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		topicDenied := all == nil && !rc.Authorized(kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			switch {
			case all != nil:
				rp.ErrorCode = errcode.Of(all)
			case topicDenied:
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			default:
				po := groupcoord.PartitionOffset{TP: group.TopicPartition{Topic: t.Topic, Partition: p.Partition}, Offset: p.Offset, LeaderEpoch: -1, Metadata: deref(p.Metadata)}
				if req.Version >= 2 {
					po.LeaderEpoch = p.LeaderEpoch
				}
				offsets = append(offsets, po)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	// Point at the entries only now that the slices stopped growing.
	for ti := range resp.Topics {
		for pi := range resp.Topics[ti].Partitions {
			if all == nil && resp.Topics[ti].Partitions[pi].ErrorCode == 0 {
				slots = append(slots, &resp.Topics[ti].Partitions[pi].ErrorCode)
			}
		}
	}
	if len(offsets) == 0 {
		return resp, nil
	}
	by := groupcoord.CommitMember{Generation: -1}
	if req.Version >= 3 {
		by = groupcoord.CommitMember{MemberID: req.MemberID, InstanceID: deref(req.InstanceID), Generation: req.Generation}
	}
	h.groups.TxnCommitOffsets(req.Group, req.ProducerID, req.ProducerEpoch, by, offsets, func(errs []error) {
		for i, err := range errs {
			*slots[i] = errcode.Of(fencedForVersion(err, req.Version, 3))
		}
		rc.Respond(resp)
	})
	return nil, nil
}
