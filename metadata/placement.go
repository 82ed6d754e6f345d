package metadata

import (
	"fmt"
	"slices"
	"strings"
)

// maxTopicNameLen is Kafka's limit on topic names.
const maxTopicNameLen = 249

// MaxPartitions bounds the partitions of one topic so that one request
// cannot make the controller build a huge record.
const MaxPartitions = 100_000

// ValidateTopicName applies Kafka's rules: 1 to 249 characters of
// [a-zA-Z0-9._-], and neither "." nor "..".
func ValidateTopicName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty name", ErrInvalidTopic)
	case name == "." || name == "..":
		return fmt.Errorf("%w: %q is not allowed", ErrInvalidTopic, name)
	case len(name) > maxTopicNameLen:
		return fmt.Errorf("%w: name longer than %d characters", ErrInvalidTopic, maxTopicNameLen)
	}
	for _, c := range []byte(name) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '.' || c == '_' || c == '-'
		if !ok {
			return fmt.Errorf("%w: %q contains characters other than [a-zA-Z0-9._-]", ErrInvalidTopic, name)
		}
	}
	return nil
}

// checkTopicCollision refuses a name that equals an existing other topic's
// once '.' is read as '_' (their metric names would collide), as Kafka does.
// It compares without building the normalized names: one pass over the
// topic names, allocating nothing, per topic created.
func checkTopicCollision(img *Image, name string) error {
	if !strings.ContainsAny(name, "._") {
		return nil
	}
	for other := range img.Topics {
		if other != name && sameMetricName(other, name) {
			return fmt.Errorf("%w: %q collides with existing topic %q", ErrInvalidTopic, name, other)
		}
	}
	return nil
}

// sameMetricName reports whether a and b are equal with every '.' read as
// '_'.
func sameMetricName(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if x == '.' {
			x = '_'
		}
		if y == '.' {
			y = '_'
		}
		if x != y {
			return false
		}
	}
	return true
}

// checkAssignment validates an explicit replica assignment against img:
// partitions 0..n-1 present, each with the same number (>= 1) of distinct
// registered brokers, at least one of them unfenced. It returns the
// assignment as a slice indexed by partition.
func checkAssignment(img *Image, a map[int32][]int32) ([][]int32, error) {
	if len(a) == 0 {
		return nil, fmt.Errorf("%w: empty assignment", ErrInvalidReplicaAssignment)
	}
	if len(a) > MaxPartitions {
		return nil, fmt.Errorf("%w: more than %d partitions", ErrInvalidPartitions, MaxPartitions)
	}
	out := make([][]int32, len(a))
	for p := range out {
		replicas, ok := a[int32(p)]
		if !ok {
			return nil, fmt.Errorf("%w: partitions must be numbered 0..%d, %d is missing", ErrInvalidReplicaAssignment, len(a)-1, p)
		}
		if len(replicas) == 0 {
			return nil, fmt.Errorf("%w: partition %d has no replicas", ErrInvalidReplicaAssignment, p)
		}
		if len(replicas) != len(out[0]) && p > 0 {
			return nil, fmt.Errorf("%w: partition %d has %d replicas, partition 0 has %d", ErrInvalidReplicaAssignment, p, len(replicas), len(out[0]))
		}
		if leaderOf(img, replicas) == NoLeader {
			return nil, fmt.Errorf("%w: partition %d has no unfenced replica", ErrInvalidReplicaAssignment, p)
		}
		for i, id := range replicas {
			if _, ok := img.Brokers[id]; !ok {
				return nil, fmt.Errorf("%w: partition %d: broker %d is not registered", ErrInvalidReplicaAssignment, p, id)
			}
			if slices.Contains(replicas[:i], id) {
				return nil, fmt.Errorf("%w: partition %d: broker %d listed twice", ErrInvalidReplicaAssignment, p, id)
			}
		}
		out[p] = slices.Clone(replicas)
	}
	return out, nil
}

// leaderOf returns the first replica that is a registered unfenced broker,
// or NoLeader.
func leaderOf(img *Image, replicas []int32) int32 {
	for _, id := range replicas {
		if b, ok := img.Brokers[id]; ok && !b.Fenced {
			return id
		}
	}
	return NoLeader
}
