package cluster

import (
	"strings"
	"testing"
)

func TestLogFileBudget(t *testing.T) {
	for _, c := range []struct {
		name   string
		nofile uint64
		want   int
	}{
		{"unlimited: no bound", 0, 0},
		{"low ulimit: the minimum reserve", 200, 200 - 64},
		{"default 1024: a quarter reserved", 1024, 1024 - 256},
		{"20000", 20_000, 15_000},
		{"below the reserve: the minimum budget", 10, minLogFiles},
	} {
		if got := logFileBudget(c.nofile); got != c.want {
			t.Errorf("%s: logFileBudget(%d) = %d, want %d", c.name, c.nofile, got, c.want)
		}
	}
}

func TestPartitionCapacity(t *testing.T) {
	for _, c := range []struct{ maxBroker, want int64 }{{10_000, 10_000}, {0, 0}, {-1, 0}} {
		if got := partitionCapacity(c.maxBroker); got != c.want {
			t.Errorf("partitionCapacity(%d) = %d, want %d", c.maxBroker, got, c.want)
		}
	}
}

// TestCapacityShortfall: a broker whose log dirs hold more partitions than
// max.broker.partitions says so; the file-descriptor limit is no longer a
// reason (the logs' descriptors are bounded by the storage file cache).
func TestCapacityShortfall(t *testing.T) {
	for _, tc := range []struct {
		name      string
		hosted    int64
		maxBroker int64
		want      string // "" for no message
	}{
		{"fits", 100, 1000, ""},
		{"no limit", 1_000_000, 0, ""},
		{"exactly at capacity", 256, 256, ""},
		{"max.broker.partitions", 500, 100, "more than max.broker.partitions=100"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := capacityShortfall(tc.hosted, tc.maxBroker)
			if tc.want == "" {
				if got != "" {
					t.Fatalf("message %q, want none", got)
				}
				return
			}
			if !strings.Contains(got, tc.want) {
				t.Fatalf("message %q, want it to contain %q", got, tc.want)
			}
		})
	}
}
