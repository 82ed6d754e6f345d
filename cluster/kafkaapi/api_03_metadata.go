package kafkaapi

// Metadata (key 3).
//
// Answers from the local metadata image: the unfenced brokers with their
// endpoint for the listener the request came in on, the cluster id, the
// active controller (or a broker that forwards to it, when the active
// controller is not a broker: advertisedControllerID), and each requested topic with its id (v10+),
// partitions, leaders, leader epochs, replicas and ISR. Topics may be
// named or, from v10, given by id. An unknown topic is created through
// the controller when auto.create.topics.enable is set and the request
// allows it (always before v4), with the broker's num.partitions and
// default.replication.factor. As in Kafka's KafkaApis.getTopicMetadata
// with AutoTopicCreationManager.createTopics (KRaft), the creation is
// sent to the controller in the background (autocreate.go) and the
// request is answered at once UNKNOWN_TOPIC_OR_PARTITION with no
// partitions, as are those asking while it is in flight; the topic is
// described once this broker's image has it. So a topic just deleted is
// not described again, partitions and all, by the request that re-creates
// it. v13's top-level error code (KIP-1102) is
// for errors that stop the whole request; kbroker has none, so it is 0.
//
// Authorization, as Kafka: a topic is described only with DESCRIBE on it.
// A named topic without it gets TOPIC_AUTHORIZATION_FAILED (and is not
// auto-created; creating also needs CREATE on the cluster or the topic),
// a topic asked for by id gets TOPIC_AUTHORIZATION_FAILED without its
// name, and a request for all topics leaves it out.

import (
	"context"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/metadata"
)

func init() {
	register(apiSpec{key: 3, min: 0, max: 13, handle: (*Handlers).handleMetadata, actions: metadataActions})
}

// authorizedOperationsOmitted is Kafka's "not requested" marker.
const authorizedOperationsOmitted = -2147483648

// metadataActions declares DESCRIBE on every topic named; topics asked
// for by id or as "all" are checked by name as the image resolves them.
func metadataActions(_ *server.RequestContext, kreq kmsg.Request) []server.Action {
	req := kreq.(*kmsg.MetadataRequest)
	return server.TopicActions(kmsg.ACLOperationDescribe, func(yield func(string)) {
		for _, t := range req.Topics {
			if t.Topic != nil {
				yield(*t.Topic)
			}
		}
	})
}

func describeTopicAllowed(rc *server.RequestContext, topic string) bool {
	return rc.Authorized(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, topic)
}

// createTopicAllowed is Kafka's rule for auto-creation: CREATE on the
// cluster or on the topic.
func createTopicAllowed(rc *server.RequestContext, topic string) bool {
	return rc.AuthorizedCluster(kmsg.ACLOperationCreate) ||
		rc.Authorized(kmsg.ACLOperationCreate, kmsg.ACLResourceTypeTopic, topic)
}

func (h *Handlers) handleMetadata(ctx context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	img := h.liveness.AwaitFailover(ctx, req)

	allTopics := req.Topics == nil || req.Version == 0 && len(req.Topics) == 0
	if !allTopics {
		img = h.awaitNamedTopics(ctx, req.Topics)
	}
	autoCreate := h.cfg.AutoCreateTopicsEnable && (req.Version < 4 || req.AllowAutoTopicCreation)
	if !allTopics && autoCreate {
		h.autoCreateTopics(rc, img, req.Topics)
	}

	resp.Brokers = metadataBrokers(img, rc.Listener)
	resp.ClusterID = &img.ClusterID
	listed := make([]int32, len(resp.Brokers))
	for i, b := range resp.Brokers {
		listed[i] = b.NodeID
	}
	resp.ControllerID = advertisedControllerID(h.store.ControllerID(), listed)
	resp.AuthorizedOperations = authorizedOperationsOmitted

	resp.Topics = h.metadataTopics(rc, img, req.Topics, allTopics, autoCreate)
	fillAuthorizedOperations(rc, req, resp)
	return resp, nil
}

// metadataTopics describes the topics asked for (every topic the
// principal may describe when all) from img. It reads nothing but img
// and the refusing brokers, so its cost is that of the topics described.
func (h *Handlers) metadataTopics(rc *server.RequestContext, img *metadata.Image, topics []kmsg.MetadataRequestTopic, all, autoCreate bool) []kmsg.MetadataResponseTopic {
	var out []kmsg.MetadataResponseTopic
	if all {
		names := img.SortedTopicNames() // shared: read only
		out = make([]kmsg.MetadataResponseTopic, 0, len(names))
		for _, name := range names {
			if !describeTopicAllowed(rc, name) {
				continue
			}
			out = append(out, h.metadataTopic(img.Topics[name], img))
		}
		return out
	}
	for _, rt := range topics {
		var t *metadata.Topic
		if rt.Topic != nil {
			t = img.Topics[*rt.Topic]
		} else {
			t = img.TopicsByID[rt.TopicID]
		}
		if rt.Topic != nil && !describeTopicAllowed(rc, *rt.Topic) || rt.Topic == nil && t != nil && !describeTopicAllowed(rc, t.Name) {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic = rt.Topic // nil when asked by id: the name is not told
			mt.TopicID = rt.TopicID
			mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			mt.AuthorizedOperations = authorizedOperationsOmitted
			out = append(out, mt)
			continue
		}
		if t == nil {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic = rt.Topic
			mt.TopicID = rt.TopicID
			switch {
			case rt.Topic == nil:
				mt.ErrorCode = kerr.UnknownTopicID.Code
			case metadata.ValidateTopicName(*rt.Topic) != nil:
				mt.ErrorCode = kerr.InvalidTopicException.Code
			case autoCreate && !createTopicAllowed(rc, *rt.Topic):
				// Kafka: a topic that would be auto-created but for
				// the missing CREATE is refused, not unknown.
				mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			default:
				mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			}
			mt.AuthorizedOperations = authorizedOperationsOmitted
			out = append(out, mt)
			continue
		}
		out = append(out, h.metadataTopic(t, img))
	}
	return out
}

// topicOperations are the operations Kafka defines on a TOPIC.
var topicOperations = []kmsg.ACLOperation{
	kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate, kmsg.ACLOperationDescribe,
	kmsg.ACLOperationDelete, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs,
}

// fillAuthorizedOperations computes the authorized-operations bit fields
// the request asks for (v8+): of every topic described, and (v8–10) of
// the cluster, the latter only for a principal with DESCRIBE on it (0
// otherwise), as Kafka does.
func fillAuthorizedOperations(rc *server.RequestContext, req *kmsg.MetadataRequest, resp *kmsg.MetadataResponse) {
	if req.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = 0
		if rc.AuthorizedCluster(kmsg.ACLOperationDescribe) {
			resp.AuthorizedOperations = rc.AuthorizedOperations(kmsg.ACLResourceTypeCluster, server.ClusterResourceName, server.ClusterOperations)
		}
	}
	if !req.IncludeTopicAuthorizedOperations {
		return
	}
	for i := range resp.Topics {
		mt := &resp.Topics[i]
		if mt.ErrorCode == 0 && mt.Topic != nil {
			mt.AuthorizedOperations = rc.AuthorizedOperations(kmsg.ACLResourceTypeTopic, *mt.Topic, topicOperations)
		}
	}
}

// autoCreateTopics hands the named topics that do not exist in img, and
// that the principal may describe and create, to the auto-creator.
func (h *Handlers) autoCreateTopics(rc *server.RequestContext, img *metadata.Image, topics []kmsg.MetadataRequestTopic) {
	var specs []metadata.TopicSpec
	for _, rt := range topics {
		if rt.Topic == nil || img.Topics[*rt.Topic] != nil || metadata.ValidateTopicName(*rt.Topic) != nil {
			continue
		}
		if !describeTopicAllowed(rc, *rt.Topic) || !createTopicAllowed(rc, *rt.Topic) {
			continue
		}
		if slices.ContainsFunc(specs, func(s metadata.TopicSpec) bool { return s.Name == *rt.Topic }) {
			continue
		}
		specs = append(specs, metadata.TopicSpec{Name: *rt.Topic, NumPartitions: -1, ReplicationFactor: -1})
	}
	h.autoCreator.submit(specs)
}

func metadataBrokers(img *metadata.Image, listener string) []kmsg.MetadataResponseBroker {
	return listenerBrokers(img, listener, false)
}

// listenerBrokers lists the brokers with an endpoint on listener, by id:
// the unfenced ones, and the fenced ones too when withFenced.
func listenerBrokers(img *metadata.Image, listener string, withFenced bool) []kmsg.MetadataResponseBroker {
	ids := make([]int32, 0, len(img.Brokers))
	for id, b := range img.Brokers {
		if withFenced || !b.Fenced {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	out := make([]kmsg.MetadataResponseBroker, 0, len(ids))
	for _, id := range ids {
		ep, ok := img.BrokerEndpoint(id, listener)
		if !ok {
			continue
		}
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID, b.Host, b.Port = id, ep.Host, ep.Port
		if rack := img.Brokers[id].Rack; rack != "" {
			b.Rack = &rack
		}
		out = append(out, b)
	}
	return out
}

func (h *Handlers) metadataTopic(t *metadata.Topic, img *metadata.Image) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Name
	mt.Topic = &name
	mt.TopicID = t.ID
	mt.IsInternal = isInternalTopic(t.Name)
	mt.AuthorizedOperations = authorizedOperationsOmitted
	mt.Partitions = make([]kmsg.MetadataResponseTopicPartition, 0, len(t.Partitions))
	lv := h.leaderLiveness(img)
	for _, p := range t.Partitions {
		mt.Partitions = append(mt.Partitions, lv.metadataPartition(p))
	}
	return mt
}

// leaderLiveness answers, for the partitions of one response, whether a
// replica is offline and whether a leader is refused. It asks the
// refusing brokers (a mutex) once per response rather than once per
// partition: almost always none is refusing.
type leaderLiveness struct {
	n        *Handlers
	img      *metadata.Image
	now      time.Time
	refusing bool
}

func (h *Handlers) leaderLiveness(img *metadata.Image) leaderLiveness {
	return leaderLiveness{n: h, img: img, now: time.Now(), refusing: h.liveness.AnyRefusing()}
}

// metadataPartition describes p as Metadata does.
func (lv leaderLiveness) metadataPartition(p *metadata.Partition) kmsg.MetadataResponseTopicPartition {
	mp := kmsg.NewMetadataResponseTopicPartition()
	mp.Partition = p.ID
	mp.Leader = p.Leader
	mp.LeaderEpoch = p.LeaderEpoch
	mp.Replicas = p.Replicas
	mp.ISR = p.ISR
	mp.OfflineReplicas = []int32{}
	for _, r := range p.Replicas {
		if b, ok := lv.img.Brokers[r]; !ok || b.Fenced {
			mp.OfflineReplicas = append(mp.OfflineReplicas, r)
		}
	}
	leader, registered := lv.img.Brokers[p.Leader]
	switch {
	case p.Leader < 0:
		mp.ErrorCode = kerr.LeaderNotAvailable.Code
	case !registered || leader.Fenced:
		// A fenced (or unregistered) leader is not in the response's
		// broker list, and a client cannot send to a broker it was not
		// told of (franz-go fails such a produce with "unknown broker",
		// fatal to a transactional producer). Kafka never names one:
		// its controller moves or drops leadership when it fences.
		mp.Leader = -1
		mp.ErrorCode = kerr.LeaderNotAvailable.Code
	case lv.refusing && lv.n.liveness.RefusingLeader(lv.img, p.Leader, lv.now):
		// Its process looks gone and the wait for its fencing
		// (awaitFailover) timed out: Kafka's answer for a leader
		// that is not alive.
		mp.Leader = -1
		mp.ErrorCode = kerr.LeaderNotAvailable.Code
	}
	return mp
}

func isInternalTopic(name string) bool {
	return name == "__consumer_offsets" || name == "__transaction_state"
}

// awaitNamedTopics returns the image to answer a request naming topics
// from. While one of them is missing from img and this node's Raft log
// holds entries it has not applied (a topic just created: the controller
// answered CreateTopics once a majority had the record, and this node
// may still be learning that it is committed), it waits for them, at
// most maxLeadershipWait: answered UNKNOWN_TOPIC_OR_PARTITION, a
// franz-go producer of a topic created a moment ago waits its 5 s
// metadata min age before it asks again.
func (h *Handlers) awaitNamedTopics(ctx context.Context, topics []kmsg.MetadataRequestTopic) *metadata.Image {
	return h.awaitImage(ctx, func(img *metadata.Image) bool {
		for _, rt := range topics {
			if rt.Topic != nil {
				if _, ok := img.Topics[*rt.Topic]; !ok {
					return false
				}
			} else if _, ok := img.TopicsByID[rt.TopicID]; !ok {
				return false
			}
		}
		return true
	})
}
