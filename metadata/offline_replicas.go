package metadata

import (
	"context"
	"errors"
	"fmt"

	"github.com/kbroker/kbroker/metadata/decisions"
)

// A broker whose replica of a partition cannot open its log (an I/O error
// on its log dir, EMFILE) serves KAFKA_STORAGE_ERROR for it. If that
// broker leads the partition, nobody can write to it until leadership
// moves, so the broker reports its offline replicas to the controller
// with every heartbeat while the metadata still has it as leader or ISR
// member (Kafka's broker heartbeat carries its offline log dirs the same
// way), and the controller moves leadership to another alive ISR member
// and takes the broker out of the ISR. Once the log opens again the
// broker follows, catches up, and rejoins the ISR through the leader's
// AlterPartition like any follower.

// ReportOfflineReplicas tells the active controller (forwarded) that
// broker brokerID, at epoch, cannot open its replicas of partitions. It
// returns how many partitions changed leader or ISR.
func (s *Store) ReportOfflineReplicas(ctx context.Context, brokerID int32, epoch int64, partitions []TopicPartitions) (int, error) {
	res, err := call(ctx, s, opReportOfflineReplicas, offlineReport{BrokerID: brokerID, Epoch: epoch, Partitions: partitions})
	return res.Changed, err
}

type offlineReport struct {
	BrokerID   int32             `json:"brokerId"`
	Epoch      int64             `json:"epoch"`
	Partitions []TopicPartitions `json:"partitions"`
}

type offlineResult struct {
	Changed int `json:"changed"`
}

// opReportOfflineReplicas acts for the reporting broker: a node may only
// declare its own replicas offline.
var opReportOfflineReplicas = defineOp("ReportOfflineReplicas",
	func(_ *Image, r offlineReport) int32 { return r.BrokerID },
	(*Store).reportOfflineReplicas)

func (s *Store) reportOfflineReplicas(ctx context.Context, r offlineReport) (offlineResult, error) {
	if _, err := s.currentBroker(r.BrokerID, r.Epoch); err != nil {
		return offlineResult{}, err
	}
	img := s.Image()
	alive := aliveIn(img)
	others := func(id int32) bool { return id != r.BrokerID && alive(id) }
	var res offlineResult
	var errs []error
	for _, tp := range r.Partitions {
		t, ok := img.Topics[tp.Topic]
		if !ok {
			continue
		}
		for _, id := range tp.Partitions {
			p, ok := img.Partition(tp.Topic, id)
			if !ok {
				continue
			}
			n := decisions.OfflineReplica(p, r.BrokerID, others)
			if n == nil {
				continue
			}
			_, err := s.propose(ctx, recPartitionChange, &partitionChangeRecord{
				TopicID: t.ID, Partition: p.ID, Leader: n.Leader, ISR: n.ISR,
				LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch,
			})
			switch {
			case err == nil:
				res.Changed++
			case errors.Is(err, ErrStalePartitionEpoch) || errors.Is(err, ErrFencedLeaderEpoch):
				// The partition moved meanwhile; the next heartbeat's
				// report decides again on the new state.
			default:
				errs = append(errs, fmt.Errorf("offline replica %d of %s-%d: %w", r.BrokerID, tp.Topic, id, err))
			}
		}
	}
	if len(errs) > 0 {
		s.log.Warn("moving partitions away from offline replicas", "broker", r.BrokerID, "err", errors.Join(errs...))
	}
	if res.Changed > 0 {
		s.log.Info("moved partitions away from offline replicas", "broker", r.BrokerID, "partitions", res.Changed)
	}
	return res, nil
}
