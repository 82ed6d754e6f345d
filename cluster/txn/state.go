package txn

import (
	"maps"
	"slices"
	"time"
)

// State is a transaction's state; the values are the state byte of
// Kafka's __transaction_state value.
type State int8

const (
	Empty             State = 0
	Ongoing           State = 1
	PrepareCommit     State = 2
	PrepareAbort      State = 3
	CompleteCommit    State = 4
	CompleteAbort     State = 5
	Dead              State = 6
	PrepareEpochFence State = 7
)

var stateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "Unknown"
}

// Complete reports whether s ends a transaction (markers written).
func (s State) Complete() bool { return s == CompleteCommit || s == CompleteAbort }

// TopicPartition names a partition taking part in a transaction.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Metadata is one transactional id's state, as stored.
type Metadata struct {
	TransactionalID string
	ProducerID      int64
	// LastProducerID and LastProducerEpoch are the previous producer id
	// and epoch, for KIP-360 retries (a producer that lost an
	// InitProducerId answer retries with its old id and epoch). The id is
	// stored (value version 1, PreviousProducerId); the epoch, as in
	// Kafka, only in memory.
	LastProducerID    int64
	LastProducerEpoch int16
	ProducerEpoch     int16
	Timeout           time.Duration
	State             State
	Partitions        map[TopicPartition]struct{}
	LastUpdate        time.Time
	// Start is when the transaction began (the first AddPartitions of
	// Ongoing); zero outside a transaction.
	Start time.Time
}

// Clone returns a deep copy.
func (m *Metadata) Clone() *Metadata {
	c := *m
	c.Partitions = maps.Clone(m.Partitions)
	if c.Partitions == nil {
		c.Partitions = map[TopicPartition]struct{}{}
	}
	return &c
}

// SortedPartitions returns the partitions by topic then partition.
func (m *Metadata) SortedPartitions() []TopicPartition {
	out := slices.Collect(maps.Keys(m.Partitions))
	slices.SortFunc(out, func(a, b TopicPartition) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition - b.Partition)
	})
	return out
}

// HasPartitions reports whether every one of tps is in the transaction.
func (m *Metadata) HasPartitions(tps []TopicPartition) bool {
	for _, tp := range tps {
		if _, ok := m.Partitions[tp]; !ok {
			return false
		}
	}
	return true
}

// Expired reports whether an Ongoing transaction outlived its timeout.
func (m *Metadata) Expired(now time.Time) bool {
	return m.State == Ongoing && !m.Start.IsZero() && now.Sub(m.Start) > m.Timeout
}
