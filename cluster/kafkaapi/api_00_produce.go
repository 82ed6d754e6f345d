package kafkaapi

// Produce (key 0).
//
// v0–2 carry the old message formats Kafka 4 no longer accepts: they are
// advertised (librdkafka only enables compression when Produce v0 is in
// range) and every partition is refused with UNSUPPORTED_VERSION.
//
// The checks follow Kafka's order: acks must be -1, 0 or 1, else every
// partition gets INVALID_REQUIRED_ACKS and nothing is written; then per
// partition, independently (one bad partition never fails the others): the
// topic and partition exist here and this broker leads it, the records are
// exactly one magic-2 batch, the ISR is large enough for acks=-1, and the
// partition's log validates and appends the batch.
//
// acks=0 sends no response and closes the connection if any partition
// failed; acks=1 answers after the local append; acks=-1 answers once the
// high watermark passes every appended batch (at once when the ISR is this
// broker alone), or REQUEST_TIMED_OUT after the request's timeout.
//
// Authorization, as Kafka: WRITE on the transactional id when one is
// given (else every partition gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
// and WRITE on each topic (else its partitions get
// TOPIC_AUTHORIZATION_FAILED and the other topics go on).
//
// A transactional batch that would begin a transaction in its partition
// is accepted only once the transaction coordinator confirms the
// partition was added to the producer's transaction (KIP-890 part 1,
// txns_verify.go): INVALID_TXN_STATE otherwise. v11 only allows
// TRANSACTION_ABORTABLE; v12 is KIP-890 part 2's implicit
// AddPartitionsToTxn, which kbroker does not do (it keeps transaction
// version 1, see EndTxn): a v12 transactional batch is verified as v11's.
// From v13 topics are named by id (KIP-516); an id the metadata image does
// not know gets UNKNOWN_TOPIC_ID for its partitions.
//
// An acks=-1 wait is capped at maxProduceTimeout (delayed.go).

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/wire/record"
)

func init() {
	register(apiSpec{key: 0, min: 0, max: 13, handle: (*Handlers).handleProduce, actions: produceActions})
}

// produceActions declares WRITE on the transactional id, if any, and on
// every topic.
func produceActions(_ *server.RequestContext, kreq kmsg.Request) []server.Action {
	req := kreq.(*kmsg.ProduceRequest)
	out := server.TopicActions(kmsg.ACLOperationWrite, func(yield func(string)) {
		for _, t := range req.Topics {
			// From v13 only the id is sent: the handler asks
			// once the image has named the topic.
			if t.Topic != "" {
				yield(t.Topic)
			}
		}
	})
	if req.TransactionID != nil {
		out = append(out, server.Action{Operation: kmsg.ACLOperationWrite, ResourceType: kmsg.ACLResourceTypeTransactionalId, Name: *req.TransactionID})
	}
	return out
}

func (h *Handlers) handleProduce(ctx context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)

	refuseAll := int16(0)
	switch {
	case req.Version < 3:
		refuseAll = kerr.UnsupportedVersion.Code
	case !replication.ValidRequiredAcks(req.Acks):
		refuseAll = kerr.InvalidRequiredAcks.Code
	case req.TransactionID != nil && !rc.Authorized(kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, *req.TransactionID):
		refuseAll = kerr.TransactionalIDAuthorizationFailed.Code
	}

	var waits []produceWait
	failed := false
	now := time.Now()
	// One budget for the whole request's waits for leadership
	// (leader_catchup.go), however many partitions need one.
	leadershipCtx, cancelLeadership := context.WithTimeout(ctx, maxLeadershipWait)
	defer cancelLeadership()
	img := h.store.Image()
	if refuseAll == 0 {
		img = h.awaitProducedTopics(leadershipCtx, req)
	}
	for _, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		name, known := t.Topic, true
		if req.Version >= 13 {
			mt, ok := img.TopicsByID[t.TopicID]
			name, known = "", ok
			if ok {
				name = mt.Name
			}
		}
		// The name is not sent from v13 but names the metrics and the
		// leader hints.
		rt.Topic, rt.TopicID = name, t.TopicID
		topicDenied := refuseAll == 0 && known && !rc.Authorized(kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic, name)
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			rp.BaseOffset = -1
			rp.LogAppendTime = -1
			rp.LogStartOffset = -1
			switch {
			case refuseAll != 0:
				rp.ErrorCode = refuseAll
			case !known:
				rp.ErrorCode = kerr.UnknownTopicID.Code
			case topicDenied:
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			default:
				tp := replication.TopicPartition{Topic: name, Partition: p.Partition}
				part, res, err := h.produceOne(ctx, leadershipCtx, tp, p.Records, req.Acks, req.TransactionID)
				if err != nil {
					rp.ErrorCode = errcode.Of(err)
					if req.Version >= 8 {
						rp.ErrorMessage = errcode.Message(err)
					}
					h.logger.Debug("produce refused", "topic", tp.Topic, "partition", tp.Partition, "err", err)
				} else {
					h.metrics.BytesIn.WithLabelValues(tp.Topic).Add(float64(len(p.Records)))
					rp.BaseOffset = res.FirstOffset
					rp.LogAppendTime = res.LogAppendTimeMs
					rp.LogStartOffset = res.LogStartOffset
					if req.Acks == -1 {
						waits = append(waits, produceWait{
							tp: tp, part: part, lastOffset: res.LastOffset,
							topicIdx: len(resp.Topics), partIdx: len(rt.Partitions),
						})
					}
				}
			}
			if rp.ErrorCode != 0 {
				failed = true
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}

	switch {
	case req.Acks == 0:
		if failed {
			// The client reads no response, so closing the connection is
			// the only way to tell it something went wrong.
			rc.CloseConnection(errors.New("acks=0 produce failed"))
		} else {
			rc.NoResponse()
		}
		return nil, nil
	case req.Acks == -1 && len(waits) > 0:
		op := &delayedProduce{node: h, rc: rc, resp: resp, waits: waits}
		keys := make([]replication.TopicPartition, len(waits))
		for i, w := range waits {
			keys[i] = w.tp
		}
		deadline := now.Add(cappedWait(req.TimeoutMillis, maxProduceTimeout))
		server.Park(h.produceWaiters, rc, op, deadline, keys, false)
		return nil, nil
	}
	h.addProduceLeaderHints(resp, rc.Listener)
	return resp, nil
}

// awaitProducedTopics returns the image to answer req from. A producer
// that learned a new topic from another broker may reach this one before
// it has applied the topic; rather than UNKNOWN_TOPIC_ID (or
// UNKNOWN_TOPIC_OR_PARTITION), which franz-go retries only after its
// backoff, wait (bounded by ctx) for the entries this node has not
// applied yet, as Metadata does (awaitNamedTopics).
func (h *Handlers) awaitProducedTopics(ctx context.Context, req *kmsg.ProduceRequest) *metadata.Image {
	return h.awaitImage(ctx, func(img *metadata.Image) bool { return producedTopicsKnown(img, req) })
}

// producedTopicsKnown reports whether img has every topic req names (by
// id from Produce v13, by name before).
func producedTopicsKnown(img *metadata.Image, req *kmsg.ProduceRequest) bool {
	for _, t := range req.Topics {
		if req.Version >= 13 {
			if _, ok := img.TopicsByID[t.TopicID]; !ok {
				return false
			}
		} else if _, ok := img.Topics[t.Topic]; !ok {
			return false
		}
	}
	return true
}

// produceOne appends one partition's records; leadershipCtx bounds a wait
// for this broker to become the partition's leader.
func (h *Handlers) produceOne(ctx, leadershipCtx context.Context, tp replication.TopicPartition, records []byte, acks int16, txnID *string) (*replication.Partition, replication.AppendResult, error) {
	part, err := h.hostedPartition(tp)
	if errors.Is(err, replication.ErrNotLeader) || err == nil && !part.IsLeader() {
		if p, ok := h.awaitLeadership(leadershipCtx, tp); ok {
			part, err = p, nil
		}
	}
	if err != nil {
		return nil, replication.AppendResult{}, err
	}
	if err := h.liveness.LeaderCheck(); err != nil {
		return nil, replication.AppendResult{}, err
	}
	batch, rest, err := record.Parse(records)
	switch {
	case errors.Is(err, record.ErrMagic), errors.Is(err, record.ErrTruncated) && len(records) == 0:
		return nil, replication.AppendResult{}, fmt.Errorf("%w: produce needs exactly one magic 2 batch", record.ErrInvalid)
	case err != nil:
		return nil, replication.AppendResult{}, err
	case len(rest) != 0:
		return nil, replication.AppendResult{}, fmt.Errorf("%w: more than one batch for a partition", record.ErrInvalid)
	}
	if err := h.verifyTxnProduce(ctx, part, txnID, batch); err != nil {
		return nil, replication.AppendResult{}, err
	}
	res, err := part.AppendAsLeader(batch, acks)
	return part, res, err
}

// produceWait is one partition of an acks=-1 produce waiting for the high
// watermark to pass its batch.
type produceWait struct {
	tp                replication.TopicPartition
	part              *replication.Partition
	lastOffset        int64
	topicIdx, partIdx int
	done              bool
}

// delayedProduce is an acks=-1 produce waiting in the produce purgatory.
type delayedProduce struct {
	node  *Handlers // for the leader hints added to the response
	rc    *server.RequestContext
	mu    sync.Mutex
	resp  *kmsg.ProduceResponse
	waits []produceWait
}

// TryComplete answers once every partition's high watermark has passed
// its batch or the partition's leadership moved away.
func (d *delayedProduce) TryComplete() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := range d.waits {
		w := &d.waits[i]
		if w.done {
			continue
		}
		rp := &d.resp.Topics[w.topicIdx].Partitions[w.partIdx]
		switch {
		case !w.part.IsLeader() || d.node.liveness.SessionLost():
			// Leadership moved, or this broker lost its controller
			// session and will be fenced: followers now fetch from
			// another leader, so the high watermark will not pass the
			// batch here.
			rp.ErrorCode = kerr.NotLeaderForPartition.Code
			w.done = true
		case w.part.HighWatermark() > w.lastOffset:
			st := w.part.State()
			if len(st.ISR) < replication.EffectiveMinISR(st.Config.MinInsyncReplicas, len(st.Replicas)) {
				rp.ErrorCode = kerr.NotEnoughReplicasAfterAppend.Code
			}
			w.done = true
		default:
			return false
		}
	}
	// Partitions refused before parking, or whose leadership moved while
	// waiting, tell the client the new leader.
	d.node.addProduceLeaderHints(d.resp, d.rc.Listener)
	d.rc.Respond(d.resp)
	return true
}

// OnExpire answers REQUEST_TIMED_OUT for the partitions still waiting.
func (d *delayedProduce) OnExpire() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := range d.waits {
		if w := &d.waits[i]; !w.done {
			d.resp.Topics[w.topicIdx].Partitions[w.partIdx].ErrorCode = kerr.RequestTimedOut.Code
		}
	}
	d.node.addProduceLeaderHints(d.resp, d.rc.Listener)
	d.rc.Respond(d.resp)
}
