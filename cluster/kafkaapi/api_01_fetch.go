package kafkaapi

// Fetch (key 1).
//
// Consumers read each partition from its fetch offset up to the high
// watermark, or with isolation level 1 (read_committed) up to the last
// stable offset, with the aborted transactions overlapping the read
// (fetch_committed.go). The response holds at most MaxBytes, each partition at
// most its PartitionMaxBytes, except that the first partition with data
// always returns at least one whole batch, as Kafka does, so a batch
// larger than the limits cannot stall a consumer.
//
// When fewer than MinBytes are available the request waits in the fetch
// purgatory until appends provide them or MaxWaitMillis passes; an idle
// consumer therefore costs one request per MaxWaitMillis, not a spin.
//
// A fetch with ReplicaID >= 0 comes from a follower broker: the replica
// manager's ReadFollowerFetch answers it (batches up to the log end
// offset, not the high watermark; the follower's position, moving the
// high watermark and the ISR; a diverging log in the DivergingEpoch
// tagged field, v12+, KIP-320), after checking that the claimed replica
// is a registered, unfenced broker of the partition's replica set.
// Such fetches wait for MinBytes in the same purgatory, woken by leader
// appends.
//
// Authorization, as Kafka: a consumer needs READ on each topic, a
// follower CLUSTER_ACTION on the cluster; a partition refused gets
// TOPIC_AUTHORIZATION_FAILED and the others are read as usual.
//
// MaxWaitMillis is capped at maxFetchWait (delayed.go).
//
// From v13 topics travel by id only (KIP-516): each id is looked up in
// the metadata image at every read, and an id the image does not know
// (never created, or deleted meanwhile) gets UNKNOWN_TOPIC_ID for its
// partitions. From v15 a follower names itself in ReplicaState. v16 adds
// the leaders' endpoints (NodeEndpoints) for the leader hints
// (leader_hints.go); v17's ReplicaDirectoryId is for JBOD followers and
// unused (one log directory), as is v18's HighWatermark, a follower's
// (KIP-1166).
//
// Fetch sessions (KIP-227, v7+) are kept in fetch_sessions.go: the
// session decides which partitions to read (for an incremental fetch, all
// of the session's) and which of them the response carries. Waiting for
// MinBytes counts every partition of the session, as Kafka does.

import (
	"context"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/fetchsession"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/storage"
)

func init() {
	register(apiSpec{key: 1, min: 4, max: 18, handle: (*Handlers).handleFetch, actions: fetchActions})
}

// fetchActions declares CLUSTER_ACTION on the cluster for a follower,
// READ on every topic for a consumer.
func fetchActions(_ *server.RequestContext, kreq kmsg.Request) []server.Action {
	req := kreq.(*kmsg.FetchRequest)
	if replica, _ := replication.FetchReplica(req); replica >= 0 {
		return []server.Action{{Operation: kmsg.ACLOperationClusterAction, ResourceType: kmsg.ACLResourceTypeCluster, Name: server.ClusterResourceName}}
	}
	return server.TopicActions(kmsg.ACLOperationRead, func(yield func(string)) {
		for _, t := range req.Topics {
			// From v13 only the id is sent: the handler asks
			// once the image has named the topic.
			if t.Topic != "" {
				yield(t.Topic)
			}
		}
	})
}

func (h *Handlers) handleFetch(_ context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.FetchRequest)
	if replica, _ := replication.FetchReplica(req); replica >= 0 {
		// If this connection is dropped, the follower may be gone
		// (serverConfig.followerGone).
		rc.SetReplicaID(replica)
	}
	img := h.store.Image()
	replica, _ := replication.FetchReplica(req)
	fc := h.fetchSessions.Begin(req, img, rc.Principal.String(), replica >= 0, time.Now())
	if fc.ErrorCode != 0 {
		return fc.Finish(nil, img, time.Now()), nil
	}
	f := &delayedFetch{node: h, rc: rc, req: fc.Read, session: fc, peer: h.fetchPeer(rc)}
	f.follower = replica >= 0
	f.checksSeen = h.fetchWaiters.Checks()
	f.prepareWatches(img)
	resp, bytes, stop := f.read(false)
	var keys []replication.TopicPartition
	for _, t := range fc.Read.Topics {
		name, known := fetchTopicName(img, fc.Read.Version, &t)
		if !known || !f.allowed(name) {
			continue
		}
		for _, p := range t.Partitions {
			keys = append(keys, replication.TopicPartition{Topic: name, Partition: p.Partition})
		}
	}
	if stop || req.MaxWaitMillis <= 0 || bytes >= int(req.MinBytes) || len(keys) == 0 {
		rc.AfterWrite = f.bufs.Release
		return f.finish(resp), nil
	}
	f.watchAfter(resp)
	f.bufs.Release() // not answered: the purgatory reads what changes
	deadline := time.Now().Add(cappedWait(req.MaxWaitMillis, maxFetchWait))
	server.Park(h.fetchWaiters, rc, f, deadline, keys, true)
	return nil, nil
}

// fetchTopicName is the name of a requested topic: as sent before v13,
// else the image's name for its id, known false when the image has none.
func fetchTopicName(img *metadata.Image, version int16, t *kmsg.FetchRequestTopic) (name string, known bool) {
	if version < 13 {
		return t.Topic, true
	}
	mt, ok := img.TopicsByID[t.TopicID]
	if !ok {
		return "", false
	}
	return mt.Name, true
}

// allowed reports whether the fetcher may read topic.
func (f *delayedFetch) allowed(topic string) bool {
	if replica, _ := replication.FetchReplica(f.req); replica >= 0 {
		return f.rc.AuthorizedCluster(kmsg.ACLOperationClusterAction)
	}
	return f.rc.Authorized(kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, topic)
}

// delayedFetch is a fetch waiting for MinBytes. req is what to read: the
// request, or for an incremental fetch its session's partitions.
type delayedFetch struct {
	node    *Handlers
	rc      *server.RequestContext
	req     *kmsg.FetchRequest
	session *fetchsession.Context
	peer    replication.FetchPeer // for follower fetches
	// bufs holds the pooled buffers of the records of the last read. A
	// read that is answered hands them to its response, which gives them
	// back once written (RequestContext.afterWrite); one that is not
	// gives them back at once.
	bufs storage.ReadBuffers
	// follower: the fetch comes from a follower broker.
	follower bool
	// watches is, for each partition of req in order, what the first
	// read found (fetch_watch.go); observed is set once a follower's
	// first read has filled them.
	watches  []partitionWatch
	observed bool
	// checksSeen is the fetch purgatory's Check count when the fetch
	// last looked at its partitions.
	checksSeen uint64
}

// TryComplete answers when MinBytes are available or a partition needs
// an answer now (an error, a diverging log). Like Kafka's DelayedFetch it
// first compares offsets, without reading: while no key was checked
// since the last look, or every partition is quiet (fetch_watch.go),
// there is nothing to read, and nothing is. Otherwise only the
// partitions that changed are read.
func (f *delayedFetch) TryComplete() bool {
	checks := f.node.fetchWaiters.Checks()
	if checks == f.checksSeen {
		return false // no key changed since the last look
	}
	f.checksSeen = checks
	if f.allQuiet() {
		return false
	}
	resp, bytes, stop := f.read(true)
	if !stop && bytes < int(f.req.MinBytes) {
		f.bufs.Release()
		return false
	}
	f.respond(resp)
	return true
}

// OnExpire answers with what there is, reading only the partitions that
// changed since the fetch arrived: a quiet one's answer is its offsets.
func (f *delayedFetch) OnExpire() {
	resp, _, _ := f.read(true)
	f.respond(resp)
}

// respond answers with resp, whose records are in f.bufs: the connection
// releases them after writing it. f reads nothing more.
func (f *delayedFetch) respond(resp *kmsg.FetchResponse) {
	f.rc.AfterWrite = f.bufs.Release
	f.rc.Respond(f.finish(resp))
}

// finish makes the response to send from a full read, through the
// request's fetch session, and counts its bytes.
func (f *delayedFetch) finish(resp *kmsg.FetchResponse) *kmsg.FetchResponse {
	resp = f.session.Finish(resp, f.node.store.Image(), time.Now())
	f.node.countBytesOut(resp)
	return resp
}

// read builds a full response from the logs as they are now. It returns
// the number of record bytes and whether a partition error means the
// request should be answered at once rather than wait. With skipQuiet a
// partition still quiet is answered from its offsets, unread: a read
// would find nothing there either.
func (f *delayedFetch) read(skipQuiet bool) (*kmsg.FetchResponse, int, bool) {
	req := f.req
	var quiet []quietState
	if skipQuiet {
		quiet = f.quietPartitions()
	}
	if f.follower {
		return f.readFollower(quiet)
	}
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	remaining := math.MaxInt32
	if req.Version >= 3 && req.MaxBytes > 0 {
		remaining = int(req.MaxBytes)
	}
	total := 0
	minOneBatch := true
	stop := false
	img := f.node.store.Image()
	i := -1 // p's index in f.watches
	for _, t := range req.Topics {
		rt := kmsg.NewFetchResponseTopic()
		name, known := fetchTopicName(img, req.Version, &t)
		// The name is not sent from v13 but names the bytes-out metric.
		rt.Topic = name
		rt.TopicID = t.TopicID
		allowed := known && f.allowed(name)
		for _, p := range t.Partitions {
			i++
			if quiet != nil && quiet[i].ok {
				rt.Partitions = append(rt.Partitions, f.quietAnswer(i, quiet[i]))
				continue
			}
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = p.Partition
			rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
			rp.PreferredReadReplica = -1
			// Never null: librdkafka rejects a response whose records
			// length is -1, and Kafka always sends at least an empty
			// field.
			rp.RecordBatches = []byte{}
			if !known {
				// Kafka answers an unknown id without asking
				// about authorization: there is nothing to name.
				rp.ErrorCode = kerr.UnknownTopicID.Code
				stop = true
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			if !allowed {
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			tp := replication.TopicPartition{Topic: name, Partition: p.Partition}
			limit := min(int(p.PartitionMaxBytes), remaining)
			res, lso, aborted, err := f.node.readConsumerPartition(tp, p.CurrentLeaderEpoch, p.FetchOffset, limit, minOneBatch, req.IsolationLevel == 1, &f.bufs)
			rp.AbortedTransactions = aborted
			if err != nil {
				rp.ErrorCode = errcode.Of(err)
				stop = true
				if rp.ErrorCode == kerr.OffsetOutOfRange.Code {
					rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = res.HighWatermark, res.HighWatermark, res.LogStartOffset
				}
				f.node.addFetchLeaderHint(resp, img, name, &rp, f.rc.Listener)
			} else {
				rp.HighWatermark = res.HighWatermark
				rp.LastStableOffset = lso
				rp.LogStartOffset = res.LogStartOffset
				if len(res.Records) > 0 {
					rp.RecordBatches = res.Records
					minOneBatch = false
					total += len(res.Records)
					remaining = max(0, remaining-len(res.Records))
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, total, stop
}

// readPartition reads one partition for a consumer, checking leadership
// and the client's leader epoch first.
func (h *Handlers) readPartition(tp replication.TopicPartition, currentLeaderEpoch int32, offset int64, maxBytes int, minOneBatch bool, bufs *storage.ReadBuffers) (replication.FetchResult, error) {
	part, err := h.hostedPartition(tp)
	if err != nil {
		return replication.FetchResult{}, err
	}
	if err := part.CheckLeaderEpoch(currentLeaderEpoch); err != nil {
		return replication.FetchResult{}, err
	}
	res, err := part.ReadPooled(offset, maxBytes, minOneBatch, bufs)
	if err != nil {
		res.HighWatermark = part.HighWatermark()
		res.LogStartOffset = part.LogStartOffset()
	}
	return res, err
}

// countBytesOut adds a fetch response's record bytes to the per-topic
// bytes-out counter, once, when the response is sent.
func (h *Handlers) countBytesOut(resp *kmsg.FetchResponse) {
	for _, t := range resp.Topics {
		size := 0
		for _, p := range t.Partitions {
			size += len(p.RecordBatches)
		}
		if size > 0 {
			h.metrics.BytesOut.WithLabelValues(t.Topic).Add(float64(size))
		}
	}
}
