package cluster

// The share coordinator's and the share-partition manager's views of the
// Node (sharecoord.Host, sharepart.Host), and the persister both use to
// reach the share coordinator of a share-partition: this broker's own
// when it leads the key's partition of __share_group_state, another
// broker's over the state APIs (83–87) otherwise.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/coordinator"
	"github.com/kbroker/kbroker/cluster/groupcoord"
	"github.com/kbroker/kbroker/cluster/share"
	"github.com/kbroker/kbroker/cluster/sharecoord"
	"github.com/kbroker/kbroker/cluster/sharepart"
	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/storage"
)

// sharesNodeHost is the sharecoord.Host of a Node.
type sharesNodeHost struct{ n *Node }

func (h sharesNodeHost) Image() *metadata.Image { return h.n.store.Image() }

func (h sharesNodeHost) StateReplica(p int32) (coordinator.OffsetsReplica, error) {
	part, err := h.n.replicas.Partition(replication.TopicPartition{Topic: sharecoord.StateTopic, Partition: p})
	if err != nil {
		return nil, err
	}
	return partitionReplica{part}, nil
}

func (h sharesNodeHost) CreateStateTopic(ctx context.Context, spec metadata.TopicSpec) error {
	err := h.n.store.CreateTopics(ctx, []metadata.TopicSpec{spec}, false)[0]
	if err != nil && !errors.Is(err, metadata.ErrTopicExists) {
		return err
	}
	if aerr := h.n.replicas.Apply(h.n.store.Image()); aerr != nil {
		h.n.logger.Warn("opening "+sharecoord.StateTopic+" partitions", "component", "shares", "err", aerr)
	}
	return err
}

func (h sharesNodeHost) GroupPartition(group string) int32 { return h.n.groups.PartitionFor(group) }

func (h sharesNodeHost) LeadsGroup(group string) bool {
	part, err := h.n.replicas.Partition(replication.TopicPartition{Topic: groupcoord.OffsetsTopic, Partition: h.n.groups.PartitionFor(group)})
	return err == nil && part.IsLeader()
}

// sharesConfigOf is the share coordinator's part of a node's config.
func sharesConfigOf(n *Node) sharecoord.Config {
	return sharecoord.Config{
		StateTopicPartitions:        n.cfg.ShareCoordinatorStateTopicNumParts,
		StateTopicReplicationFactor: n.cfg.ShareCoordinatorStateTopicRF,
		StateTopicMinISR:            int32(n.cfg.ShareCoordinatorStateTopicMinISR),
		GroupFor: func(group string) (share.GroupConfig, time.Duration) {
			s := n.cfg.ShareGroupSettingsFor(n.store.Image().GroupConfigs[group])
			return share.GroupConfig{SessionTimeout: s.SessionTimeout, MaxSize: int(n.cfg.GroupShareMaxSize)}, s.HeartbeatInterval
		},
	}
}

// sharePartsHost is the sharepart.Host of a Node.
type sharePartsHost struct{ n *Node }

func (h sharePartsHost) Replica(topicID [16]byte, p int32) (sharepart.Replica, string, error) {
	t, ok := h.n.store.Image().TopicsByID[topicID]
	if !ok {
		return nil, "", kerr.UnknownTopicID
	}
	part, err := h.n.replicas.Partition(replication.TopicPartition{Topic: t.Name, Partition: p})
	if err != nil {
		return nil, t.Name, err
	}
	return shareReplica{part}, t.Name, nil
}

func (h sharePartsHost) Settings(group string) sharepart.Settings {
	s := h.n.cfg.ShareGroupSettingsFor(h.n.store.Image().GroupConfigs[group])
	return sharepart.Settings{
		Partition: share.Config{
			LockDuration:       s.RecordLockDuration,
			DeliveryCountLimit: s.DeliveryCountLimit,
			MaxRecordLocks:     int(s.MaxRecordLocks),
		},
		Earliest:      s.AutoOffsetReset == "earliest",
		ReadCommitted: s.ReadCommitted,
	}
}

// shareReplica is the sharepart.Replica of a replicated partition.
type shareReplica struct{ p *replication.Partition }

func (r shareReplica) IsLeader() bool          { return r.p.IsLeader() }
func (r shareReplica) LeaderEpoch() int32      { return r.p.State().LeaderEpoch }
func (r shareReplica) LogStartOffset() int64   { return r.p.LogStartOffset() }
func (r shareReplica) HighWatermark() int64    { return r.p.HighWatermark() }
func (r shareReplica) LastStableOffset() int64 { return r.p.LastStableOffset() }

func (r shareReplica) Read(offset int64, maxBytes int, upperBound int64) ([]byte, error) {
	return r.p.Log().Read(offset, maxBytes, upperBound, true)
}

func (r shareReplica) AbortedTransactions(from, to int64) ([]storage.AbortedTxn, error) {
	return r.p.Log().AbortedTransactions(from, to)
}

// statePersister reaches the share coordinator of a share-partition.
type statePersister struct{ n *Node }

// statePersistTimeout bounds one call to another broker's coordinator.
const statePersistTimeout = 10 * time.Second

// coordinatorOf is the broker leading k's __share_group_state partition,
// creating the topic on first use.
func (p statePersister) coordinatorOf(ctx context.Context, k share.StateKey) (int32, metadata.Endpoint, bool, error) {
	topic := p.n.shares.Topic()
	id, ep, err := topic.CoordinatorFor(ctx, sharecoord.StateKeyString(k), p.n.cfg.InterBrokerListenerName)
	if err != nil {
		return -1, metadata.Endpoint{}, false, err
	}
	return id, ep, id == p.n.cfg.NodeID, nil
}

// remote sends req to k's coordinator on another broker.
func (p statePersister) remote(ctx context.Context, id int32, ep metadata.Endpoint, req kmsg.Request) (kmsg.Response, error) {
	ctx, cancel := context.WithTimeout(ctx, statePersistTimeout)
	defer cancel()
	resp, err := p.n.txnClients.Request(ctx, id, ep, req)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", kerr.CoordinatorNotAvailable, err)
	}
	return resp, nil
}

// partErr is the error of the one partition of a state API answer.
func partErr(code int16, msg *string) error {
	err := kerr.ErrorForCode(code)
	if err != nil && msg != nil {
		return fmt.Errorf("%w: %s", err, *msg)
	}
	return err
}

func (p statePersister) doRead(ctx context.Context, k share.StateKey, leaderEpoch int32) (share.Snapshot, error) {
	id, ep, local, err := p.coordinatorOf(ctx, k)
	if err != nil {
		return share.Snapshot{}, err
	}
	if local {
		return p.n.shares.ReadState(ctx, k, leaderEpoch)
	}
	req := kmsg.NewPtrReadShareGroupStateRequest()
	req.GroupID = k.Group
	rt := kmsg.NewReadShareGroupStateRequestTopic()
	rt.TopicID = k.TopicID
	rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch = k.Partition, leaderEpoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kresp, err := p.remote(ctx, id, ep, req)
	if err != nil {
		return share.Snapshot{}, err
	}
	resp := kresp.(*kmsg.ReadShareGroupStateResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return share.Snapshot{}, fmt.Errorf("%w: ReadShareGroupState answer of another shape", kerr.UnknownServerError)
	}
	rpp := resp.Topics[0].Partitions[0]
	if err := partErr(rpp.ErrorCode, rpp.ErrorMessage); err != nil {
		return share.Snapshot{}, err
	}
	s := share.Snapshot{StateEpoch: rpp.StateEpoch, StartOffset: rpp.StartOffset, Batches: make([]share.StateBatch, 0, len(rpp.StateBatches))}
	for _, b := range rpp.StateBatches {
		s.Batches = append(s.Batches, share.StateBatch{First: b.FirstOffset, Last: b.LastOffset, State: share.RecordState(b.DeliveryState), DeliveryCount: int32(b.DeliveryCount)})
	}
	return s, nil
}

func (p statePersister) doWrite(ctx context.Context, k share.StateKey, leaderEpoch int32, s share.Snapshot) error {
	id, ep, local, err := p.coordinatorOf(ctx, k)
	if err != nil {
		return err
	}
	if local {
		return p.n.shares.WriteState(ctx, k, leaderEpoch, s)
	}
	req := kmsg.NewPtrWriteShareGroupStateRequest()
	req.GroupID = k.Group
	rt := kmsg.NewWriteShareGroupStateRequestTopic()
	rt.TopicID = k.TopicID
	rp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	rp.Partition, rp.StateEpoch, rp.LeaderEpoch, rp.StartOffset = k.Partition, s.StateEpoch, leaderEpoch, s.StartOffset
	for _, b := range s.Batches {
		sb := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
		sb.FirstOffset, sb.LastOffset, sb.DeliveryState = b.First, b.Last, int8(b.State)
		sb.DeliveryCount = int16(min(b.DeliveryCount, 1<<15-1))
		rp.StateBatches = append(rp.StateBatches, sb)
	}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kresp, err := p.remote(ctx, id, ep, req)
	if err != nil {
		return err
	}
	resp := kresp.(*kmsg.WriteShareGroupStateResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return fmt.Errorf("%w: WriteShareGroupState answer of another shape", kerr.UnknownServerError)
	}
	return partErr(resp.Topics[0].Partitions[0].ErrorCode, resp.Topics[0].Partitions[0].ErrorMessage)
}

func (p statePersister) doInitialize(ctx context.Context, k share.StateKey, stateEpoch int32, startOffset int64) error {
	id, ep, local, err := p.coordinatorOf(ctx, k)
	if err != nil {
		return err
	}
	if local {
		return p.n.shares.InitializeState(ctx, k, stateEpoch, startOffset)
	}
	req := kmsg.NewPtrInitializeShareGroupStateRequest()
	req.GroupID = k.Group
	rt := kmsg.NewInitializeShareGroupStateRequestTopic()
	rt.TopicID = k.TopicID
	rp := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
	rp.Partition, rp.StateEpoch, rp.StartOffset = k.Partition, stateEpoch, startOffset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kresp, err := p.remote(ctx, id, ep, req)
	if err != nil {
		return err
	}
	resp := kresp.(*kmsg.InitializeShareGroupStateResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return fmt.Errorf("%w: InitializeShareGroupState answer of another shape", kerr.UnknownServerError)
	}
	return partErr(resp.Topics[0].Partitions[0].ErrorCode, resp.Topics[0].Partitions[0].ErrorMessage)
}

func (p statePersister) doSummary(ctx context.Context, k share.StateKey) (sharecoord.Summary, error) {
	id, ep, local, err := p.coordinatorOf(ctx, k)
	if err != nil {
		return sharecoord.Summary{}, err
	}
	if local {
		return p.n.shares.SummaryState(k)
	}
	req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	req.GroupID = k.Group
	rt := kmsg.NewReadShareGroupStateSummaryRequestTopic()
	rt.TopicID = k.TopicID
	rp := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch = k.Partition, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kresp, err := p.remote(ctx, id, ep, req)
	if err != nil {
		return sharecoord.Summary{}, err
	}
	resp := kresp.(*kmsg.ReadShareGroupStateSummaryResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return sharecoord.Summary{}, fmt.Errorf("%w: ReadShareGroupStateSummary answer of another shape", kerr.UnknownServerError)
	}
	rpp := resp.Topics[0].Partitions[0]
	if err := partErr(rpp.ErrorCode, rpp.ErrorMessage); err != nil {
		return sharecoord.Summary{}, err
	}
	return sharecoord.Summary{StateEpoch: rpp.StateEpoch, LeaderEpoch: rpp.LeaderEpoch, StartOffset: rpp.StartOffset, DeliveryComplete: rpp.DeliveryCompleteCount}, nil
}

func (p statePersister) doDelete(ctx context.Context, k share.StateKey) error {
	id, ep, local, err := p.coordinatorOf(ctx, k)
	if err != nil {
		return err
	}
	if local {
		return p.n.shares.DeleteState(ctx, k)
	}
	req := kmsg.NewPtrDeleteShareGroupStateRequest()
	req.GroupID = k.Group
	rt := kmsg.NewDeleteShareGroupStateRequestTopic()
	rt.TopicID = k.TopicID
	rp := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
	rp.Partition = k.Partition
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kresp, err := p.remote(ctx, id, ep, req)
	if err != nil {
		return err
	}
	resp := kresp.(*kmsg.DeleteShareGroupStateResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return fmt.Errorf("%w: DeleteShareGroupState answer of another shape", kerr.UnknownServerError)
	}
	return partErr(resp.Topics[0].Partitions[0].ErrorCode, resp.Topics[0].Partitions[0].ErrorMessage)
}

// Kafka's persister retries the errors of a coordinator that moved or is
// loading, with backoff; so does this one, within statePersistRetry.
const (
	statePersistRetry   = 15 * time.Second
	statePersistBackoff = 100 * time.Millisecond
)

// retry runs f until it succeeds, fails with an error no retry mends, or
// statePersistRetry (or ctx) ends.
func retry[T any](ctx context.Context, f func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, statePersistRetry)
	defer cancel()
	backoff := statePersistBackoff
	for {
		v, err := f(ctx)
		if err == nil || !(errors.Is(err, kerr.NotCoordinator) || errors.Is(err, kerr.CoordinatorLoadInProgress) || errors.Is(err, kerr.CoordinatorNotAvailable)) {
			return v, err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return v, err
		case <-t.C:
		}
		backoff = min(2*backoff, time.Second)
	}
}

func (p statePersister) Read(ctx context.Context, k share.StateKey, leaderEpoch int32) (share.Snapshot, error) {
	return retry(ctx, func(ctx context.Context) (share.Snapshot, error) { return p.doRead(ctx, k, leaderEpoch) })
}

func (p statePersister) Write(ctx context.Context, k share.StateKey, leaderEpoch int32, s share.Snapshot) error {
	_, err := retry(ctx, func(ctx context.Context) (struct{}, error) { return struct{}{}, p.doWrite(ctx, k, leaderEpoch, s) })
	return err
}

func (p statePersister) Initialize(ctx context.Context, k share.StateKey, stateEpoch int32, startOffset int64) error {
	_, err := retry(ctx, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, p.doInitialize(ctx, k, stateEpoch, startOffset)
	})
	return err
}

func (p statePersister) Summary(ctx context.Context, k share.StateKey) (sharecoord.Summary, error) {
	return retry(ctx, func(ctx context.Context) (sharecoord.Summary, error) { return p.doSummary(ctx, k) })
}

func (p statePersister) Delete(ctx context.Context, k share.StateKey) error {
	_, err := retry(ctx, func(ctx context.Context) (struct{}, error) { return struct{}{}, p.doDelete(ctx, k) })
	return err
}
