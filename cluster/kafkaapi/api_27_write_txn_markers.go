package kafkaapi

// WriteTxnMarkers (key 27).
//
// The inter-broker request a transaction coordinator sends to the leaders
// of a transaction's partitions.
//
// Each partition gets a control batch (COMMIT or ABORT) for the producer
// id and epoch, written with the acks=all checks of a client append
// (replication.Partition.AppendControlAsLeader) and answered once the
// high watermark passes it, so a marker acknowledged to the coordinator
// survives the leader. On a __consumer_offsets partition the marker also
// commits (or drops) the producer's pending transactional offsets of its
// groups (groups_txn_offsets.go).
//
// Authorization, as Kafka: CLUSTER_ACTION on the cluster, else every
// partition gets CLUSTER_AUTHORIZATION_FAILED.

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/groupcoord"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/replication"
)

func init() {
	register(apiSpec{key: 27, min: 0, max: 1, handle: (*Handlers).handleWriteTxnMarkers, actions: clusterActionActions})
}

// clusterActionActions declares CLUSTER_ACTION on the cluster.
func clusterActionActions(*server.RequestContext, kmsg.Request) []server.Action {
	return []server.Action{{Operation: kmsg.ACLOperationClusterAction, ResourceType: kmsg.ACLResourceTypeCluster, Name: server.ClusterResourceName}}
}

// writeTxnMarkersTimeout bounds the wait for markers to replicate.
const writeTxnMarkersTimeout = 10 * time.Second

func (h *Handlers) handleWriteTxnMarkers(ctx context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.WriteTxnMarkersRequest)
	if !rc.AuthorizedCluster(kmsg.ACLOperationClusterAction) {
		return writeTxnMarkersError(req, kerr.ClusterAuthorizationFailed), nil
	}
	return h.WriteTxnMarkers(ctx, req), nil
}

// writeTxnMarkersError answers every partition of req with err.
func writeTxnMarkersError(req *kmsg.WriteTxnMarkersRequest, err *kerr.Error) *kmsg.WriteTxnMarkersResponse {
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	for _, m := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition, rp.ErrorCode = p, err.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	return resp
}

// WriteTxnMarkers writes every marker of req on this broker and waits
// until each is replicated or failed (also the coordinator's path to its
// own partitions).
func (h *Handlers) WriteTxnMarkers(ctx context.Context, req *kmsg.WriteTxnMarkersRequest) *kmsg.WriteTxnMarkersResponse {
	resp := writeTxnMarkersError(req, &kerr.Error{Code: 0})
	var wg sync.WaitGroup
	var mu sync.Mutex // guards the error codes set by completions
	deadline := time.Now().Add(writeTxnMarkersTimeout)
	for i, m := range req.Markers {
		for j, t := range m.Topics {
			for k, p := range t.Partitions {
				code := &resp.Markers[i].Topics[j].Partitions[k].ErrorCode
				setErr := func(err error) {
					mu.Lock()
					if *code == 0 && err != nil {
						*code = errcode.Of(err)
					}
					mu.Unlock()
				}
				tp := replication.TopicPartition{Topic: t.Topic, Partition: p}
				part, err := h.hostedPartition(tp)
				if err != nil {
					setErr(err)
					continue
				}
				res, err := part.AppendControlAsLeader(m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch, m.Committed)
				if err != nil {
					h.logger.Debug("transaction marker refused", "topic", tp.Topic, "partition", tp.Partition, "producer.id", m.ProducerID, "err", err)
					setErr(err)
					continue
				}
				wg.Add(1)
				done := make(chan struct{})
				h.produceWaiters.TryCompleteElseWatch(&delayedMarker{part: part, lastOffset: res.LastOffset, done: func(err error) {
					setErr(err)
					close(done)
				}}, deadline, tp)
				go func() {
					defer wg.Done()
					select {
					case <-done:
					case <-ctx.Done():
						setErr(kerr.RequestTimedOut)
					}
				}()
				if tp.Topic == groupcoord.OffsetsTopic {
					h.groups.CompleteTxnOffsets(p, m.ProducerID, m.Committed)
				}
			}
		}
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	return resp
}

// delayedMarker waits for the high watermark to pass a marker.
type delayedMarker struct {
	part       *replication.Partition
	lastOffset int64
	done       func(error)
}

func (d *delayedMarker) TryComplete() bool {
	switch {
	case !d.part.IsLeader():
		d.done(kerr.NotLeaderForPartition)
	case d.part.HighWatermark() > d.lastOffset:
		d.done(nil)
	default:
		return false
	}
	return true
}

func (d *delayedMarker) OnExpire() { d.done(kerr.RequestTimedOut) }
