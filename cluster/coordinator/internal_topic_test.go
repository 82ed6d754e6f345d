package coordinator

import "testing"

func TestPartitionForMatchesKafka(t *testing.T) {
	// Java's String.hashCode, and Kafka's abs (x & 0x7fffffff) for the
	// one hash whose Math.abs is negative.
	for _, tt := range []struct {
		id   string
		hash int32
	}{
		{"", 0},
		{"a", 97},
		{"ab", 97*31 + 98},
		{"polygenelubricants", -2147483648}, // Integer.MIN_VALUE: abs -> 0
	} {
		if got := JavaStringHashCode(tt.id); got != tt.hash {
			t.Errorf("hashCode(%q) = %d, want %d", tt.id, got, tt.hash)
		}
	}
	if got := PartitionFor("polygenelubricants", 50); got != 0 {
		t.Errorf("partition of a MIN_VALUE hash = %d, want 0", got)
	}
}
