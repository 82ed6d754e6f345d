package metadata

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/hashicorp/raft"
	"github.com/kbroker/kbroker/metadata/decisions"
)

// ElectLeaders is Kafka's ElectLeaders on the controller: an operator asks
// for a preferred or an unclean leader election of some partitions, or of
// every partition. Each election is a PartitionChange record decided on
// the partition's current epochs, so the FSM rejects one that a
// concurrent change made stale; the controller then decides again on the
// newer image, a bounded number of times.

// ElectionType and ElectionOutcome are package decisions'.
type (
	ElectionType    = decisions.ElectionType
	ElectionOutcome = decisions.ElectionOutcome
)

const (
	ElectPreferred              = decisions.ElectPreferred
	ElectUnclean                = decisions.ElectUnclean
	Elected                     = decisions.Elected
	ElectionNotNeeded           = decisions.ElectionNotNeeded
	PreferredLeaderNotAvailable = decisions.PreferredLeaderNotAvailable
	EligibleLeadersNotAvailable = decisions.EligibleLeadersNotAvailable
	ElectionUnknownPartition    = decisions.ElectionUnknownPartition
	ElectionFailed              = decisions.ElectionFailed
)

// TopicPartitions names some partitions of a topic.
type TopicPartitions struct {
	Topic      string  `json:"topic"`
	Partitions []int32 `json:"partitions"`
}

// ElectionResult is the outcome of one partition's election.
type ElectionResult struct {
	Topic     string          `json:"topic"`
	Partition int32           `json:"partition"`
	Outcome   ElectionOutcome `json:"outcome"`
	Message   string          `json:"message,omitempty"`
}

type electLeadersRequest struct {
	Type ElectionType `json:"type"`
	// All asks for every partition; Partitions is then ignored.
	All        bool              `json:"all"`
	Partitions []TopicPartitions `json:"partitions,omitempty"`
}

// electAttempts bounds how often a partition is decided again after its
// record was rejected as stale.
const electAttempts = 3

// ElectLeaders runs elections of type typ for the named partitions, or for
// every partition when partitions is nil. With nil, as in Kafka, the
// partitions whose election was not needed are left out of the results.
// The caller rejects duplicates and unknown election types before.
func (s *Store) ElectLeaders(ctx context.Context, typ ElectionType, partitions []TopicPartitions) ([]ElectionResult, error) {
	if typ != ElectPreferred && typ != ElectUnclean {
		return nil, fmt.Errorf("elect leaders: %w: election type %d", ErrInvalidPartitionChange, typ)
	}
	return call(ctx, s, opElectLeaders, electLeadersRequest{Type: typ, All: partitions == nil, Partitions: partitions})
}

var opElectLeaders = defineOp("ElectLeaders", nil, (*Store).electLeaders)

// electTarget is one partition an election is asked for.
type electTarget struct {
	topic     string
	partition int32
}

func (s *Store) electLeaders(ctx context.Context, r electLeadersRequest) ([]ElectionResult, error) {
	if r.Type != ElectPreferred && r.Type != ElectUnclean {
		return nil, fmt.Errorf("elect leaders: %w: election type %d", ErrInvalidPartitionChange, r.Type)
	}
	var targets []electTarget
	if r.All {
		img := s.Image()
		for _, name := range img.SortedTopicNames() {
			for _, p := range img.Topics[name].Partitions {
				targets = append(targets, electTarget{name, p.ID})
			}
		}
	} else {
		for _, tp := range r.Partitions {
			for _, p := range tp.Partitions {
				targets = append(targets, electTarget{tp.Topic, p})
			}
		}
	}
	results := make([]ElectionResult, len(targets))
	pending := make([]int, len(targets)) // indexes into targets still to decide
	for i, t := range targets {
		results[i] = ElectionResult{Topic: t.topic, Partition: t.partition}
		pending[i] = i
	}
	for attempt := 0; len(pending) > 0; attempt++ {
		img := s.Image()
		alive := aliveIn(img)
		type proposed struct {
			i   int
			rec *partitionChangeRecord
		}
		var props []proposed
		for _, i := range pending {
			t := targets[i]
			topic, ok := img.Topics[t.topic]
			if !ok || t.partition < 0 || int(t.partition) >= len(topic.Partitions) {
				results[i].Outcome = ElectionUnknownPartition
				results[i].Message = fmt.Sprintf("unknown topic or partition %s-%d", t.topic, t.partition)
				continue
			}
			p := topic.Partitions[t.partition]
			leader, isr, outcome := decisions.Elect(p, r.Type, alive)
			results[i].Outcome = outcome
			if outcome != Elected {
				continue
			}
			props = append(props, proposed{i, &partitionChangeRecord{
				TopicID: topic.ID, Partition: p.ID, Leader: leader, ISR: isr,
				LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch,
			}})
		}
		pending = pending[:0]
		// Start every record before waiting for any: they commit in one
		// round of raft replication rather than one round each.
		errs := make([]error, len(props))
		futures := make([]raft.ApplyFuture, len(props))
		for k, pr := range props {
			futures[k], errs[k] = s.start(ctx, recPartitionChange, pr.rec)
		}
		for k, f := range futures {
			if errs[k] == nil {
				_, errs[k] = s.finish(ctx, f)
			}
		}
		for k, pr := range props {
			err := errs[k]
			switch {
			case err == nil:
			case (errors.Is(err, ErrStalePartitionEpoch) || errors.Is(err, ErrFencedLeaderEpoch)) && attempt+1 < electAttempts:
				pending = append(pending, pr.i)
			case errors.Is(err, ErrNotController) || errors.Is(err, ErrClosed) || ctx.Err() != nil:
				return nil, fmt.Errorf("elect leaders: %w", err)
			default:
				results[pr.i].Outcome = ElectionFailed
				results[pr.i].Message = err.Error()
			}
		}
	}
	if r.All {
		results = slices.DeleteFunc(results, func(e ElectionResult) bool { return e.Outcome == ElectionNotNeeded })
	}
	return results, nil
}
