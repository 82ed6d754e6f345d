package metadata

import (
	"context"
	"fmt"

	"github.com/kbroker/kbroker/metadata/decisions"
	"github.com/kbroker/kbroker/metadata/features"
)

// AlterPartition (Kafka's): a leader's ISR changes of many partitions in
// one request, checked per partition and committed as one
// PartitionChangeBatch record, so that a broker rejoining every ISR costs
// a few requests and raft entries, not one of each per partition.

// recPartitionChangeBatch is numbered as AlterPartition's API key, far
// from the others (see brokers.go).
const recPartitionChangeBatch recordType = 56

func init() { recordNames[recPartitionChangeBatch] = "PartitionChangeBatch" }

// partitionChangeBatchRecord is PartitionChange records in one raft entry,
// written from metadata.version 3 only.
type partitionChangeBatchRecord struct {
	Changes []partitionChangeRecord `json:"changes"`
}

// applyPartitionChangeBatch applies each change as a PartitionChange
// record and returns each one's error: a rejected change leaves the
// others. Below metadata.version 3 it is rejected whole, as a build that
// does not know it skips it. The changes share one copy of the topic maps
// and of each topic they change (Image.batch), in applyBatch or not.
func applyPartitionChangeBatch(img *Image, r *partitionChangeBatchRecord) ([]error, error) {
	if mv := img.Features()[features.MetadataVersion]; mv < features.MetadataVersionAlterPartitionBatch {
		return nil, fmt.Errorf("%w: PartitionChangeBatch at metadata.version %d", ErrUnsupportedRecord, mv)
	}
	if img.batch == nil {
		img.batch, img.topicsOwner = &batchToken{}, nil
		defer func() { img.batch, img.topicsOwner = nil, nil }()
	}
	errs := make([]error, len(r.Changes))
	for i := range r.Changes {
		errs[i] = applyPartitionChange(img, &r.Changes[i])
	}
	return errs, nil
}

type alterPartitionRequest struct {
	Broker  int32             `json:"brokerId"`
	Changes []PartitionChange `json:"changes"`
}

// AlterPartition proposes changes of partitions broker leads in one
// request and one raft entry; below metadata.version 3 it fails with
// ErrUnsupportedRecord (send ChangePartition for each). It returns one
// error per change, nil when applied: ErrFencedLeaderEpoch,
// ErrStalePartitionEpoch, ErrInvalidPartitionChange (broker does not lead
// it, or named twice) fail a change alone. err fails the request; the
// outcome of its changes is then unknown.
func (s *Store) AlterPartition(ctx context.Context, broker int32, changes []PartitionChange) ([]error, error) {
	errs, err := call(ctx, s, opAlterPartition, alterPartitionRequest{broker, changes})
	if err == nil && len(errs) != len(changes) {
		err = fmt.Errorf("metadata: AlterPartition answered %d results for %d changes", len(errs), len(changes))
	}
	return errs, err
}

// opAlterPartition acts for the broker it names, which must lead each
// partition at the change's leader epoch.
var opAlterPartition = defineOp("AlterPartition",
	func(_ *Image, r alterPartitionRequest) int32 { return r.Broker },
	func(s *Store, ctx context.Context, r alterPartitionRequest) (errorList, error) {
		img := s.Image()
		if mv := img.Features()[features.MetadataVersion]; mv < features.MetadataVersionAlterPartitionBatch {
			return nil, fmt.Errorf("%w: AlterPartition at metadata.version %d", ErrUnsupportedRecord, mv)
		}
		errs := make(errorList, len(r.Changes))
		var rec partitionChangeBatchRecord
		var at []int // the change of each record entry
		seen := map[*Partition]bool{}
		for i, c := range r.Changes {
			p, ok := img.Partition(c.Topic, c.Partition)
			if !ok {
				errs[i] = fmt.Errorf("%w: %s-%d", ErrUnknownTopic, c.Topic, c.Partition)
			} else if errs[i] = decisions.CheckSender(p, r.Broker, c.LeaderEpoch); errs[i] == nil && seen[p] {
				errs[i] = fmt.Errorf("%w: named twice", ErrInvalidPartitionChange)
			}
			if errs[i] != nil {
				errs[i] = fmt.Errorf("%s-%d: %w", c.Topic, c.Partition, errs[i])
				continue
			}
			seen[p], at = true, append(at, i)
			rec.Changes = append(rec.Changes, partitionChangeRecord{TopicID: img.Topics[c.Topic].ID, Partition: c.Partition,
				Leader: c.Leader, ISR: c.ISR, LeaderEpoch: c.LeaderEpoch, PartitionEpoch: c.PartitionEpoch})
		}
		if len(at) == 0 {
			return errs, nil
		}
		res, err := s.propose(ctx, recPartitionChangeBatch, &rec)
		if err != nil {
			return nil, fmt.Errorf("alter partition: %w", err)
		}
		for k, e := range res.([]error) {
			errs[at[k]] = e
		}
		return errs, nil
	})
