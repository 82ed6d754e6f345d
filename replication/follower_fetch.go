package replication

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/storage"
)

// This file is the leader's side of replication: serving a follower's
// Fetch request. The Kafka Fetch handler and the in-memory test transport
// both call ReadFollowerFetch; only the waiting for MinBytes is theirs.

// FetchReplica returns the broker a Fetch request claims to come from and
// that broker's epoch: ReplicaID up to v14, ReplicaState from v15
// (KIP-903). The id is -1 for a consumer; the epoch is -1 when the
// request carries none.
func FetchReplica(req *kmsg.FetchRequest) (replicaID int32, brokerEpoch int64) {
	if req.Version >= 15 {
		return req.ReplicaState.ID, req.ReplicaState.Epoch
	}
	return req.ReplicaID, -1
}

// FetchPeer is what the connection layer vouches for about the sender of
// a follower fetch. The replica id and broker epoch inside the request
// are the sender's claims; this is the connection's own evidence.
type FetchPeer struct {
	// Broker reports that the connection may act for a broker (Kafka's
	// ClusterAction on the cluster resource). With security on, the
	// connection layer sets it only for a broker principal on the
	// inter-broker listener. With every listener PLAINTEXT there is no
	// principal to check, so it is set for every connection, as Kafka
	// without an authorizer allows everyone.
	Broker bool
}

// FollowerFetchResult is what a leader answers a follower's fetch of one
// partition. DivergingEpoch and DivergingEndOffset are -1 unless the
// follower's log diverges from the leader's (KIP-320): then Records is
// empty and the follower must truncate to at most DivergingEndOffset.
type FollowerFetchResult struct {
	Records            []byte
	HighWatermark      int64
	LogStartOffset     int64
	LogEndOffset       int64
	DivergingEpoch     int32
	DivergingEndOffset int64
}

// followerFetch is one partition of a follower's Fetch request.
type followerFetch struct {
	replicaID   int32
	brokerEpoch int64 // -1: not sent
	tp          TopicPartition
	fetchOffset int64
	// currentLeaderEpoch is the follower's idea of the leader epoch and
	// lastFetchedEpoch the epoch of its last batch; -1: not sent.
	currentLeaderEpoch, lastFetchedEpoch int32
	maxBytes                             int
	minOneBatch                          bool
}

// ReadFollowerFetch answers a follower's Fetch request (FetchReplica id >=
// 0) from the logs as they are now. For each partition this broker leads
// it checks the follower's leader epoch and that the sender is a replica
// the image vouches for (checkFollower), detects a diverging log from
// LastFetchedEpoch (KIP-320: the answer is the leader's end offset of
// that epoch, no records), returns batches from FetchOffset up to the log
// end offset (not the high watermark), records the follower's log end
// offset and catch-up time, advances the high watermark and proposes the
// follower for the ISR when it has caught up.
//
// The response honours MaxBytes and PartitionMaxBytes, except that the
// first partition with data returns at least one whole batch. It returns
// the record bytes read and whether the response must be sent now (a
// partition error or a diverging log), rather than wait for MinBytes.
// The caller does the waiting, calling again when the log grows.
//
// A connection peer does not vouch for gets TOPIC_AUTHORIZATION_FAILED on
// every partition, as Kafka answers a follower without ClusterAction.
func (m *Manager) ReadFollowerFetch(req *kmsg.FetchRequest, peer FetchPeer, now time.Time) (resp *kmsg.FetchResponse, recordBytes int, answerNow bool) {
	return m.ReadFollowerFetchPooled(req, peer, now, nil)
}

// ReadFollowerFetchPooled is ReadFollowerFetch reading into pooled
// buffers recorded in bufs: the response's records are valid until
// bufs.Release (storage.ReadBuffers), which the caller calls once the
// response is encoded or dropped.
func (m *Manager) ReadFollowerFetchPooled(req *kmsg.FetchRequest, peer FetchPeer, now time.Time, bufs *storage.ReadBuffers) (resp *kmsg.FetchResponse, recordBytes int, answerNow bool) {
	return m.ReadFollowerFetchObserved(req, peer, now, bufs, nil)
}

// FollowerReadSeen is what the read of one partition of a follower fetch
// went by: the partition, its Epochs as checked before reading and its
// log start offset. Part is nil when the partition was not read (not
// hosted, refused before its epochs were looked at).
type FollowerReadSeen struct {
	Part     *Partition
	Epochs   Epochs
	LogStart int64
}

// ReadFollowerFetchObserved is ReadFollowerFetchPooled, calling seen (if
// not nil) for each partition of req in order, with the i-th partition's
// FollowerReadSeen. A parked fetch keeps them to tell later, without
// reading, that nothing the read depended on has changed.
func (m *Manager) ReadFollowerFetchObserved(req *kmsg.FetchRequest, peer FetchPeer, now time.Time, bufs *storage.ReadBuffers, seen func(i int, s FollowerReadSeen)) (resp *kmsg.FetchResponse, recordBytes int, answerNow bool) {
	replicaID, brokerEpoch := FetchReplica(req)
	i := -1
	resp = req.ResponseKind().(*kmsg.FetchResponse)
	remaining := math.MaxInt32
	if req.Version >= 3 && req.MaxBytes > 0 {
		remaining = int(req.MaxBytes)
	}
	var refused error
	if !peer.Broker {
		refused = fmt.Errorf("%w: replica %d", ErrReplicaNotAuthorized, replicaID)
	}
	// Whether the image vouches for the sender is the same for every
	// partition: asked once, reported where checkFollower reports it.
	brokerErr := m.CheckFollowerBroker(replicaID, brokerEpoch)
	minOneBatch := true
	for _, t := range req.Topics {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		topicErr := refused
		if req.Version >= 13 && topicErr == nil {
			// From v13 topics travel by id only (KIP-516).
			rt.Topic, topicErr = m.topicName(t.TopicID)
		}
		rt.Partitions = make([]kmsg.FetchResponseTopicPartition, 0, len(t.Partitions))
		for _, p := range t.Partitions {
			i++
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = p.Partition
			rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
			rp.PreferredReadReplica = -1
			// Never null: librdkafka rejects a response whose records
			// length is -1, and Kafka always sends at least an empty
			// field.
			rp.RecordBatches = []byte{}
			ff := followerFetch{
				replicaID:          replicaID,
				brokerEpoch:        brokerEpoch,
				tp:                 TopicPartition{Topic: rt.Topic, Partition: p.Partition},
				fetchOffset:        p.FetchOffset,
				currentLeaderEpoch: p.CurrentLeaderEpoch,
				lastFetchedEpoch:   p.LastFetchedEpoch,
				maxBytes:           min(int(p.PartitionMaxBytes), remaining),
				minOneBatch:        minOneBatch,
			}
			if req.Version < 9 {
				ff.currentLeaderEpoch = -1
			}
			if req.Version < 12 {
				ff.lastFetchedEpoch = -1
			}
			var res FollowerFetchResult
			var read FollowerReadSeen
			err := topicErr
			if err == nil {
				res, err = m.readForFollower(ff, brokerErr, now, bufs, &read)
			}
			if seen != nil {
				seen(i, read)
			}
			if err != nil {
				rp.ErrorCode = errorCode(err)
				answerNow = true
				if rp.ErrorCode == kerr.OffsetOutOfRange.Code {
					// The follower restarts from these.
					rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = res.HighWatermark, res.HighWatermark, res.LogStartOffset
				}
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			// No transactions: the last stable offset is the high
			// watermark.
			rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = res.HighWatermark, res.HighWatermark, res.LogStartOffset
			rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset = res.DivergingEpoch, res.DivergingEndOffset
			if res.DivergingEpoch >= 0 || res.DivergingEndOffset >= 0 {
				answerNow = true
			}
			if n := len(res.Records); n > 0 {
				rp.RecordBatches = res.Records
				minOneBatch = false
				recordBytes += n
				remaining = max(0, remaining-n)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, recordBytes, answerNow
}

// readForFollower serves one partition of a follower fetch (see
// ReadFollowerFetch). On ErrOffsetOutOfRange the result still carries the
// high watermark and the log start and end offsets, so the follower can
// restart.
func (m *Manager) readForFollower(ff followerFetch, brokerErr error, now time.Time, bufs *storage.ReadBuffers, seen *FollowerReadSeen) (FollowerFetchResult, error) {
	res := FollowerFetchResult{DivergingEpoch: -1, DivergingEndOffset: -1, HighWatermark: -1, LogStartOffset: -1, LogEndOffset: -1}
	p, err := m.Partition(ff.tp)
	if err != nil {
		return res, m.notHosted(ff.tp)
	}
	p.mu.RLock()
	leader, replicas := p.mu.leader, p.mu.replicas
	seen.Part, seen.Epochs = p, Epochs{Leader: leader, LeaderEpoch: p.mu.leaderEpoch, PartitionEpoch: p.mu.partitionEpoch}
	p.mu.RUnlock()
	if leader != m.cfg.NodeID {
		return res, ErrNotLeader
	}
	// Kafka's order: the leader epoch, then who is asking.
	if err := p.CheckLeaderEpoch(ff.currentLeaderEpoch); err != nil {
		return res, err
	}
	if err := m.checkFollower(replicas, ff, brokerErr); err != nil {
		return res, err
	}
	res.HighWatermark = p.HighWatermark()
	res.LogStartOffset = p.log.LogStartOffset()
	seen.LogStart = res.LogStartOffset
	leo := p.log.LogEndOffset()
	res.LogEndOffset = leo
	if ff.lastFetchedEpoch >= 0 {
		epoch, end, err := p.endOffsetForEpoch(ff.lastFetchedEpoch)
		if err != nil {
			return res, err
		}
		if epoch != ff.lastFetchedEpoch || end < ff.fetchOffset {
			// The follower's position is not on the leader's log: it
			// truncates first, and its position is not recorded (it
			// would count a log end offset the leader does not hold).
			res.DivergingEpoch, res.DivergingEndOffset = epoch, end
			return res, nil
		}
	}
	// A throttled replica outside the ISR gets nothing while the leader
	// throttle is exceeded (Kafka's shouldLeaderThrottle); its position
	// is still recorded below.
	throttled := p.leaderThrottled.Load()
	if !throttled || p.inISR(ff.replicaID) || !m.leaderThrottle.exceeded(now) {
		recs, err := p.log.ReadPooled(ff.fetchOffset, ff.maxBytes, math.MaxInt64, ff.minOneBatch, bufs)
		if err != nil {
			return res, err
		}
		res.Records = recs
		if throttled {
			m.leaderThrottle.record(len(recs), now)
		}
	}
	if p.recordFollowerFetch(ff.replicaID, ff.fetchOffset, leo, now) {
		m.proposeISRExpand(p, ff.replicaID)
	}
	if p.maybeAdvanceHighWatermark() {
		p.hooks.highWatermark(ff.tp)
	}
	res.HighWatermark = p.HighWatermark()
	return res, nil
}

// checkFollower refuses a follower fetch unless its replica id names one
// of the partition's replicas other than this broker, a broker the image
// applied last holds as registered and unfenced, and, when the request
// carries a broker epoch (Fetch v15+, KIP-903), that broker's current
// registration. Without it anyone able to send a Fetch could move a
// follower's log end offset, and with it the high watermark, for a
// replica that holds nothing: an acks=all produce would be acknowledged
// with no copy anywhere else.
//
// The codes are Kafka's: a replica outside the replica set is
// UNKNOWN_LEADER_EPOCH when the request names a leader epoch (a follower
// added by a reassignment this leader has not applied yet retries) and
// NOT_LEADER_OR_FOLLOWER otherwise; a stale broker epoch is
// NOT_LEADER_OR_FOLLOWER. Kafka serves unregistered and fenced brokers;
// here they get NOT_LEADER_OR_FOLLOWER too, and retry: a broker is
// registered unfenced as it starts, and a fenced broker has left every
// ISR it could be counted in. A broker epoch other than the registered
// one, newer included, is refused: a newer one means this leader's image
// lags the registration, which the follower's retry outlasts.
//
// brokerErr is CheckFollowerBroker's answer for the sender, asked once
// per request.
func (m *Manager) checkFollower(replicas []int32, ff followerFetch, brokerErr error) error {
	id := ff.replicaID
	if id == m.cfg.NodeID {
		return fmt.Errorf("%w: replica %d is this broker", ErrNotLeader, id)
	}
	if !slices.Contains(replicas, id) {
		if ff.currentLeaderEpoch >= 0 {
			return fmt.Errorf("%w: replica %d is not in the replica set %v", ErrUnknownLeaderEpoch, id, replicas)
		}
		return fmt.Errorf("%w: replica %d is not in the replica set %v", ErrNotLeader, id, replicas)
	}
	return brokerErr
}

// CheckFollowerBroker is the part of checkFollower that does not depend
// on the partition: replicaID must be a registered, unfenced broker of
// the image applied last and, when brokerEpoch >= 0, registered at that
// epoch. A parked follower fetch asks it once for all its partitions.
func (m *Manager) CheckFollowerBroker(replicaID int32, brokerEpoch int64) error {
	m.mu.RLock()
	img := m.mu.image
	m.mu.RUnlock()
	var b *metadata.Broker
	if img != nil {
		b = img.Brokers[replicaID]
	}
	switch {
	case b == nil:
		return fmt.Errorf("%w: replica %d is not a registered broker", ErrNotLeader, replicaID)
	case b.Fenced:
		return fmt.Errorf("%w: broker %d is fenced", ErrNotLeader, replicaID)
	case brokerEpoch >= 0 && brokerEpoch != b.Epoch:
		return fmt.Errorf("%w: broker %d fetches at broker epoch %d, registered at %d", ErrNotLeader, replicaID, brokerEpoch, b.Epoch)
	}
	return nil
}

// topicName returns the name of the topic with id in the image applied
// last.
func (m *Manager) topicName(id [16]byte) (string, error) {
	m.mu.RLock()
	img := m.mu.image
	m.mu.RUnlock()
	if img != nil {
		if t, ok := img.TopicsByID[id]; ok {
			return t.Name, nil
		}
	}
	return "", fmt.Errorf("%w: %x", ErrUnknownTopicID, id)
}

// notHosted is the error for a partition this broker does not host:
// NOT_LEADER_OR_FOLLOWER when the image knows it (the follower's image is
// ahead of or behind ours), UNKNOWN_TOPIC_OR_PARTITION otherwise.
func (m *Manager) notHosted(tp TopicPartition) error {
	m.mu.RLock()
	img := m.mu.image
	m.mu.RUnlock()
	if img != nil {
		if _, ok := img.Partition(tp.Topic, tp.Partition); ok {
			return ErrNotLeader
		}
	}
	return ErrUnknownTopicOrPartition
}
