package cluster

import "testing"

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
