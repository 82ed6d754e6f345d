package metadata

import (
	"fmt"
	"strings"

	"github.com/kbroker/kbroker/metadata/decisions"
)

// MaxPartitions bounds the partitions of one topic so that one request
// cannot make the controller build a huge record.
const MaxPartitions = 100_000

// ValidateTopicName applies Kafka's rules (decisions.ValidateTopicName).
func ValidateTopicName(name string) error { return decisions.ValidateTopicName(name) }

// checkTopicCollision refuses a name that equals an existing other topic's
// once '.' is read as '_' (their metric names would collide), as Kafka does.
// It compares without building the normalized names: one pass over the
// topic names, allocating nothing, per topic created.
func checkTopicCollision(img *Image, name string) error {
	if !strings.ContainsAny(name, "._") {
		return nil
	}
	for other := range img.Topics {
		if other != name && decisions.SameMetricName(other, name) {
			return fmt.Errorf("%w: %q collides with existing topic %q", ErrInvalidTopic, name, other)
		}
	}
	return nil
}

// checkAssignment validates an explicit replica assignment against img
// (decisions.CheckAssignment) and returns it indexed by partition.
func checkAssignment(img *Image, a map[int32][]int32) ([][]int32, error) {
	if len(a) > MaxPartitions {
		return nil, fmt.Errorf("%w: more than %d partitions", ErrInvalidPartitions, MaxPartitions)
	}
	return decisions.CheckAssignment(a, func(id int32) bool { _, ok := img.Brokers[id]; return ok }, aliveIn(img))
}

// leaderOf returns the first replica that is a registered unfenced broker,
// or NoLeader.
func leaderOf(img *Image, replicas []int32) int32 {
	return decisions.FirstAlive(replicas, aliveIn(img))
}
