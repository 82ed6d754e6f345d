package cluster

import (
	"strings"
	"testing"
)

func TestPartitionCapacity(t *testing.T) {
	for _, c := range []struct {
		name         string
		nofile       uint64
		maxBrokerPar int64
		want         int64
	}{
		{"unlimited: max.broker.partitions", 0, 10_000, 10_000},
		{"unlimited, no cap: not reported", 0, 0, 0},
		{"low ulimit: a quarter reserved, 3 files each", 256, 10_000, (256 - 64) / 3},
		{"minimum reserve", 200, 10_000, (200 - 64) / 3},
		{"default 1024", 1024, 10_000, (1024 - 256) / 3},
		{"high ulimit capped by max.broker.partitions", 1 << 20, 10_000, 10_000},
		{"high ulimit, no cap", 1 << 20, 0, (1<<20 - 1<<18) / 3},
		{"below the reserve: still 1, never 0 (not reported)", 10, 10_000, 1},
	} {
		if got := partitionCapacity(c.nofile, c.maxBrokerPar); got != c.want {
			t.Errorf("%s: partitionCapacity(%d, %d) = %d, want %d", c.name, c.nofile, c.maxBrokerPar, got, c.want)
		}
	}
}

// TestCapacityShortfall: a broker whose log dirs hold more partitions than
// its limits allow says so, naming the limit to raise; the limit it names
// is exactly enough.
func TestCapacityShortfall(t *testing.T) {
	for _, tc := range []struct {
		name      string
		hosted    int64
		nofile    uint64
		maxBroker int64
		want      string // "" for no message
	}{
		{"fits", 100, 1024, 0, ""},
		{"no limits", 1_000_000, 0, 0, ""},
		{"exactly at capacity", 256, 1024, 0, ""},
		{"fd limit lowered", 1000, 1024, 0, "RLIMIT_NOFILE 1024) leaves room for 256: 744 will be offline (KAFKA_STORAGE_ERROR) until the limit is raised to at least 3999"},
		{"small fd limit", 10, 64, 0, "leaves room for 1: 9 will be offline"},
		{"max.broker.partitions", 500, 1 << 20, 100, "more than max.broker.partitions=100"},
		{"both: the fd limit is named", 500, 1024, 100, "RLIMIT_NOFILE 1024"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := capacityShortfall(tc.hosted, tc.nofile, tc.maxBroker)
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
	for _, hosted := range []int64{1, 10, 15, 16, 17, 100, 7000} {
		need := nofileFor(hosted)
		if c := partitionCapacity(need, 0); c < hosted {
			t.Errorf("nofileFor(%d) = %d holds only %d", hosted, need, c)
		}
		if c := partitionCapacity(need-1, 0); c >= hosted {
			t.Errorf("nofileFor(%d) = %d is not the smallest: %d holds %d", hosted, need, need-1, c)
		}
	}
}
