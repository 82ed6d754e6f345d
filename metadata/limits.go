package metadata

import (
	"fmt"
	"maps"
	"slices"
)

// Capacity limits (KIP-578's names, which Kafka proposed and never
// shipped): max.partitions bounds the partitions of the whole cluster,
// max.broker.partitions the partition replicas one broker hosts. Both
// guard what a node can carry: every partition is in every node's image
// and in each metadata snapshot, and every replica keeps a log directory
// with open segment files (three descriptors per segment) on its broker.
//
// The active controller checks them when it plans CreateTopics and
// CreatePartitions, counting the topics planned earlier in the same
// request, and the record carries the limits so that the FSM checks them
// again against the image it applies to: concurrent requests cannot
// together exceed a limit, and a topic or a CreatePartitions is refused
// whole (ErrPartitionLimit), never half created.
//
// A broker may also register a PartitionCapacity, the replicas its
// process can open files for (RLIMIT_NOFILE less a reserve, divided by
// the descriptors of a partition; cluster/capacity.go). The per-broker
// limit is then the smaller of it and max.broker.partitions, so a
// CreateTopics a broker could not open is refused before anything is
// committed instead of leaving the broker with partitions it cannot serve.

const (
	// DefaultMaxPartitions is the default of max.partitions.
	DefaultMaxPartitions = 100_000
	// DefaultMaxBrokerPartitions is the default of max.broker.partitions.
	DefaultMaxBrokerPartitions = 10_000
)

// partitionLimits travel in CreateTopic and CreatePartitions records; zero
// is no limit (records written before the limits existed).
type partitionLimits struct {
	MaxPartitions       int64 `json:"maxPartitions,omitempty"`
	MaxBrokerPartitions int64 `json:"maxBrokerPartitions,omitempty"`
}

// partitionCounts is how many partitions the cluster has and how many
// replicas each broker hosts, and the capacity each broker registered.
type partitionCounts struct {
	total     int64
	perBroker map[int32]int64
	// capacity is Broker.PartitionCapacity of the brokers that reported
	// one: the replicas their file-descriptor budget lets them open. It is
	// checked with the record's limits (so only for records that carry
	// limits) and comes from the image, so every node decides alike.
	capacity map[int32]int64
}

// countPartitions counts from the image's index (O(brokers)); an image
// built by hand without one is counted partition by partition. The result
// is the caller's to change (planner.add).
func countPartitions(img *Image) *partitionCounts {
	c := &partitionCounts{perBroker: map[int32]int64{}, capacity: map[int32]int64{}}
	for id, b := range img.Brokers {
		if b.PartitionCapacity > 0 {
			c.capacity[id] = b.PartitionCapacity
		}
	}
	if img.replicas != nil {
		c.total = img.replicas.total
		maps.Copy(c.perBroker, img.replicas.perBroker)
		return c
	}
	for _, t := range img.Topics {
		c.total += int64(len(t.Partitions))
		for _, p := range t.Partitions {
			for _, r := range p.Replicas {
				c.perBroker[r]++
			}
		}
	}
	return c
}

// check returns ErrPartitionLimit if adding the partitions of
// assignment (their replica lists) would exceed lim.
func (c *partitionCounts) check(lim *partitionLimits, what string, assignment [][]int32) error {
	if lim == nil {
		return nil
	}
	n := int64(len(assignment))
	if lim.MaxPartitions > 0 && c.total+n > lim.MaxPartitions {
		return fmt.Errorf("%w: %s: %d more partitions, the cluster has %d of max.partitions=%d",
			ErrPartitionLimit, what, n, c.total, lim.MaxPartitions)
	}
	if lim.MaxBrokerPartitions <= 0 && len(c.capacity) == 0 {
		return nil
	}
	add := map[int32]int64{}
	for _, replicas := range assignment {
		for _, r := range replicas {
			add[r]++
		}
	}
	for _, b := range slices.Sorted(maps.Keys(add)) { // sorted: the same broker named every time
		k := add[b]
		if capa, ok := c.capacity[b]; ok && (lim.MaxBrokerPartitions <= 0 || capa < lim.MaxBrokerPartitions) &&
			c.perBroker[b]+k > capa {
			return fmt.Errorf("%w: %s: %d more replicas on broker %d, which hosts %d and can open the files of at most %d (its file-descriptor limit)",
				ErrPartitionLimit, what, k, b, c.perBroker[b], capa)
		}
		if lim.MaxBrokerPartitions > 0 && c.perBroker[b]+k > lim.MaxBrokerPartitions {
			return fmt.Errorf("%w: %s: %d more replicas on broker %d, which hosts %d of max.broker.partitions=%d",
				ErrPartitionLimit, what, k, b, c.perBroker[b], lim.MaxBrokerPartitions)
		}
	}
	return nil
}

// add counts the partitions of assignment.
func (c *partitionCounts) add(assignment [][]int32) {
	c.total += int64(len(assignment))
	for _, replicas := range assignment {
		for _, r := range replicas {
			c.perBroker[r]++
		}
	}
}

// replicaLists returns the replicas of each partition record.
func replicaLists(ps []partitionRecord) [][]int32 {
	out := make([][]int32, len(ps))
	for i, p := range ps {
		out[i] = p.Replicas
	}
	return out
}
