package decisions

import (
	"errors"
	"fmt"
)

// ErrInvalidTopic: a name Kafka would refuse, or one that collides with
// an existing topic once '.' and '_' are treated alike. Kafka:
// INVALID_TOPIC_EXCEPTION.
var ErrInvalidTopic = errors.New("metadata: invalid topic")

// maxTopicNameLen is Kafka's limit on topic names.
const maxTopicNameLen = 249

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

// SameMetricName reports whether a and b are equal with every '.' read as
// '_'.
func SameMetricName(a, b string) bool {
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
