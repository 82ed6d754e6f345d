package metadata

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/kbroker/kbroker/metadata/decisions"
)

// Partition reassignment (Kafka's AlterPartitionReassignments, KIP-455):
// moving a partition's replicas to a target set without losing an
// acknowledged record.
//
// An AlterReassignment record starts a reassignment: the replica set
// becomes target ++ (original − target), AddingReplicas the target
// replicas not in the original set and RemovingReplicas the original ones
// not in the target. The brokers of the adding replicas see themselves
// among the replicas, create the log and fetch from the leader, which
// adds them to the ISR once caught up (AlterPartition, a PartitionChange).
// When every target replica is in the ISR the reassignment completes in
// the FSM while it applies that change (decisions.CompleteReassignment): the
// replicas become the target, the ISR its intersection with the target
// (all of the target), and leadership moves to the first alive target
// replica if the leader is being removed. Only then do removed replicas
// leave the ISR and the replica set, so every acknowledged record is on
// every replica that stays; their brokers no longer see themselves among
// the replicas and delete the log (replication.Manager.Apply).
//
// A reassignment record with no target cancels: the replicas return to
// the original set (Replicas − AddingReplicas, in their current order),
// the adding replicas leave the ISR, and leadership moves back if an
// adding replica led. A new target for a partition being reassigned
// replaces the reassignment, computed from the original replicas.
//
// The state is in the image (the Partition's AddingReplicas and
// RemovingReplicas), so it is in the raft log and in snapshots and
// survives a controller failover; completion needs no controller: it
// happens while applying the leader's ISR expansion.

// ErrNoReassignmentInProgress: a cancellation for a partition that is not
// being reassigned.
var ErrNoReassignmentInProgress = decisions.ErrNoReassignmentInProgress

func init() {
	errorCodes = append(errorCodes, struct {
		code string
		err  error
	}{"NO_REASSIGNMENT_IN_PROGRESS", ErrNoReassignmentInProgress})
	recordNames[recAlterReassignment] = "AlterReassignment"
}

// recAlterReassignment is the record type of alterReassignmentRecord.
// (Decoded in records.go; the number is far from the others so that
// record types added meanwhile elsewhere cannot collide with it.)
const recAlterReassignment recordType = 40

// alterReassignmentRecord starts, replaces or (Target nil) cancels the
// reassignment of a partition, decided on its epochs.
type alterReassignmentRecord struct {
	TopicID        [16]byte `json:"topicId"`
	Partition      int32    `json:"partition"`
	Target         []int32  `json:"target,omitempty"` // nil: cancel
	LeaderEpoch    int32    `json:"leaderEpoch"`
	PartitionEpoch int32    `json:"partitionEpoch"`
}

// withReassignment carries cur's reassignment over to next, the partition
// a PartitionChange made of cur, and completes it if next allows.
func withReassignment(img *Image, cur, next *Partition) *Partition {
	next.AddingReplicas, next.RemovingReplicas = cur.AddingReplicas, cur.RemovingReplicas
	return decisions.CompleteReassignment(next, aliveIn(img))
}

func applyAlterReassignment(img *Image, r *alterReassignmentRecord) error {
	old, ok := img.TopicsByID[r.TopicID]
	if !ok {
		return fmt.Errorf("%w: id %x", ErrUnknownTopic, r.TopicID)
	}
	if r.Partition < 0 || int(r.Partition) >= len(old.Partitions) {
		return fmt.Errorf("%w: %q has no partition %d", ErrUnknownTopic, old.Name, r.Partition)
	}
	cur := old.Partitions[r.Partition]
	if r.PartitionEpoch != cur.PartitionEpoch {
		return fmt.Errorf("%w: %s-%d is at partition epoch %d, reassignment is based on %d",
			ErrStalePartitionEpoch, old.Name, r.Partition, cur.PartitionEpoch, r.PartitionEpoch)
	}
	if r.LeaderEpoch != cur.LeaderEpoch {
		return fmt.Errorf("%w: %s-%d is at leader epoch %d, reassignment is based on %d",
			ErrFencedLeaderEpoch, old.Name, r.Partition, cur.LeaderEpoch, r.LeaderEpoch)
	}
	if r.Target != nil {
		if err := checkTarget(img, r.Target); err != nil {
			return fmt.Errorf("%s-%d: %w", old.Name, r.Partition, err)
		}
	}
	p, err := decisions.PlanReassignment(cur, r.Target, aliveIn(img))
	if err != nil {
		return fmt.Errorf("%s-%d: %w", old.Name, r.Partition, err)
	}
	img.setPartition(old, p)
	return nil
}

// checkTarget checks a reassignment target: not empty, no broker twice,
// every broker registered.
func checkTarget(img *Image, target []int32) error {
	if len(target) == 0 {
		return fmt.Errorf("%w: empty replica set", ErrInvalidReplicaAssignment)
	}
	for i, id := range target {
		if slices.Contains(target[:i], id) {
			return fmt.Errorf("%w: broker %d named twice in %v", ErrInvalidReplicaAssignment, id, target)
		}
		if _, ok := img.Brokers[id]; !ok {
			return fmt.Errorf("%w: broker %d is not registered", ErrInvalidReplicaAssignment, id)
		}
	}
	return nil
}

// Reassignment asks for one partition's reassignment: to Replicas, or
// with Cancel the end of the one in progress.
type Reassignment struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas,omitempty"`
	Cancel    bool    `json:"cancel,omitempty"`
}

type alterReassignmentsRequest struct {
	Reassignments []Reassignment `json:"reassignments"`
	// AllowReplicationFactorChange: else a target of another size than
	// the original replica set is refused (Kafka's v1 field).
	AllowReplicationFactorChange bool `json:"allowReplicationFactorChange"`
}

// AlterPartitionReassignments starts, replaces or cancels reassignments;
// it returns one result per item, nil for success, once the records are
// committed (not when the data has moved: ListPartitionReassignments
// shows what is still in progress).
func (s *Store) AlterPartitionReassignments(ctx context.Context, rs []Reassignment, allowRFChange bool) []error {
	res, err := call(ctx, s, opAlterPartitionReassignments, alterReassignmentsRequest{rs, allowRFChange})
	return results(len(rs), res, err)
}

var opAlterPartitionReassignments = defineOp("AlterPartitionReassignments", nil,
	func(s *Store, ctx context.Context, r alterReassignmentsRequest) (errorList, error) {
		errs := make(errorList, len(r.Reassignments))
		for i, ra := range r.Reassignments {
			errs[i] = s.alterReassignment(ctx, ra, r.AllowReplicationFactorChange)
			if errors.Is(errs[i], ErrNotController) || errors.Is(errs[i], ErrClosed) {
				return nil, errs[i]
			}
		}
		return errs, nil
	})

func (s *Store) alterReassignment(ctx context.Context, r Reassignment, allowRFChange bool) error {
	for attempt := 0; ; attempt++ {
		img := s.Image()
		t, ok := img.Topics[r.Topic]
		if !ok || r.Partition < 0 || int(r.Partition) >= len(t.Partitions) {
			return fmt.Errorf("reassign %s-%d: %w", r.Topic, r.Partition, ErrUnknownTopic)
		}
		p := t.Partitions[r.Partition]
		rec := &alterReassignmentRecord{TopicID: t.ID, Partition: p.ID,
			LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch}
		if !r.Cancel {
			if r.Replicas == nil {
				r.Replicas = []int32{}
			}
			if err := checkTarget(img, r.Replicas); err != nil {
				return fmt.Errorf("reassign %s-%d: %w", r.Topic, r.Partition, err)
			}
			if original := decisions.Without(p.Replicas, p.AddingReplicas); !allowRFChange && len(r.Replicas) != len(original) {
				return fmt.Errorf("reassign %s-%d: %w: %d replicas, the partition has %d",
					r.Topic, r.Partition, ErrInvalidReplicationFactor, len(r.Replicas), len(original))
			}
			rec.Target = r.Replicas
		}
		// Decide here too, so the caller gets the reason rather than a
		// rejected record.
		if _, err := decisions.PlanReassignment(p, rec.Target, aliveIn(img)); err != nil {
			return fmt.Errorf("reassign %s-%d: %w", r.Topic, r.Partition, err)
		}
		_, err := s.propose(ctx, recAlterReassignment, rec)
		if (errors.Is(err, ErrStalePartitionEpoch) || errors.Is(err, ErrFencedLeaderEpoch)) && attempt < electAttempts {
			continue // the partition changed meanwhile: decide again
		}
		if err != nil {
			return fmt.Errorf("reassign %s-%d: %w", r.Topic, r.Partition, err)
		}
		return nil
	}
}
