package kafkaapi

// DescribeProducers (key 61).
//
// The producer state of each partition this broker leads: per producer
// id its epoch, last sequence and timestamp, the coordinator epoch of its
// last transaction marker and the start offset of its ongoing
// transaction (-1 if none). kafka-transactions.sh find-hanging and
// describe-producers use it to find transactions that block the last
// stable offset.
//
// A partition this broker hosts but does not lead, or one the metadata
// places elsewhere, is NOT_LEADER_OR_FOLLOWER: only the leader's state is
// authoritative. One that does not exist is UNKNOWN_TOPIC_OR_PARTITION.
//
// Authorization, as Kafka: READ on each topic, else
// TOPIC_AUTHORIZATION_FAILED for its partitions.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/storage"
)

func init() {
	register(apiSpec{key: 61, min: 0, max: 0, handle: (*Handlers).handleDescribeProducers, actions: describeProducersActions})
}

func describeProducersActions(_ *server.RequestContext, kreq kmsg.Request) []server.Action {
	return server.TopicActions(kmsg.ACLOperationRead, func(yield func(string)) {
		for _, t := range kreq.(*kmsg.DescribeProducersRequest).Topics {
			yield(t.Topic)
		}
	})
}

func (h *Handlers) handleDescribeProducers(_ context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewDescribeProducersResponseTopic()
		rt.Topic = t.Topic
		authorized := rc.AuthorizedTopic(kmsg.ACLOperationRead, t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewDescribeProducersResponseTopicPartition()
			rp.Partition = p
			if !authorized {
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			producers, err := h.activeProducers(replication.TopicPartition{Topic: t.Topic, Partition: p})
			if err != nil {
				rp.ErrorCode = errcode.Of(err)
				rp.ErrorMessage = errcode.Message(err)
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			for _, ap := range producers {
				a := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
				a.ProducerID = ap.ProducerID
				a.ProducerEpoch = int32(ap.ProducerEpoch)
				a.LastSequence = ap.LastSequence
				a.LastTimestamp = ap.LastTimestamp
				a.CoordinatorEpoch = ap.CoordinatorEpoch
				a.CurrentTxnStartOffset = ap.CurrentTxnStartOffset
				rp.ActiveProducers = append(rp.ActiveProducers, a)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// activeProducers reads the producer state of a partition this broker
// leads.
func (h *Handlers) activeProducers(tp replication.TopicPartition) ([]storage.ActiveProducer, error) {
	part, err := h.hostedPartition(tp)
	if err != nil {
		return nil, err
	}
	if !part.IsLeader() {
		return nil, replication.ErrNotLeader
	}
	return part.Log().ActiveProducers(), nil
}
