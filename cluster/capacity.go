package cluster

import "fmt"

// A broker registers how many partition replicas it can host
// (metadata.BrokerRegistration.PartitionCapacity), and the controller
// refuses a CreateTopics or CreatePartitions that would place more on it.
// Without this a large CreateTopics is committed and then fails on the
// broker with "too many open files", leaving partitions it cannot serve.
//
// The capacity is the smaller of max.broker.partitions and what the
// process's file-descriptor limit (RLIMIT_NOFILE, as Go raised it at
// start to the hard limit) leaves for logs:
//
//	(limit - reserve) / filesPerPartition
//
// Descriptors a partition replica holds (storage/segment.go, txnindex.go):
// every segment of the log keeps its .log, .index and .timeindex open for
// the life of the log, and a .txnindex once a transaction aborted in it.
// A new partition has one segment, so filesPerPartition counts three; a
// partition that rolled many segments holds more, which the reserve and
// max.broker.partitions must absorb (as in Kafka, whose guidance is to
// size the ulimit for segments, not partitions).
//
// The reserve is for everything else: client and replica connections,
// raft's transport and log, checkpoint files written by rename. It is a
// quarter of the limit, at least minFDReserve.

const (
	filesPerPartition = 3
	minFDReserve      = 64
)

// partitionCapacity is the replicas a broker with a file-descriptor limit
// of nofile can host, capped at maxBrokerPartitions (<= 0: no cap). A
// limit of 0 (unlimited or unknown) gives the cap. It is at least 1,
// because 0 registers "not reported" (a limit this low leaves the broker
// unusable anyway).
func partitionCapacity(nofile uint64, maxBrokerPartitions int64) int64 {
	if nofile == 0 {
		return max(maxBrokerPartitions, 0)
	}
	reserve := max(uint64(minFDReserve), nofile/4)
	if nofile <= reserve+filesPerPartition {
		return 1
	}
	c := int64(min((nofile-reserve)/filesPerPartition, 1<<62))
	if maxBrokerPartitions > 0 {
		c = min(c, maxBrokerPartitions)
	}
	return c
}

// partitionCapacity is this broker's capacity to register (capacity.go),
// checked against the partitions its log dirs already hold: a broker
// restarted under a lower RLIMIT_NOFILE (or max.broker.partitions) than
// its partitions need logs an error saying how many are beyond it and
// what to set. It still starts: the partitions whose files cannot open
// are served as KAFKA_STORAGE_ERROR (their leadership moves to other
// replicas) until descriptors are available, and refusing to start would
// take every other partition down with them.
func (n *Node) partitionCapacity() int64 {
	limit, err := fileLimit()
	if err != nil {
		n.logger.Warn("cannot read the file-descriptor limit; registering max.broker.partitions as the partition capacity", "error", err)
	}
	c := partitionCapacity(limit, int64(n.cfg.MaxBrokerPartitions))
	hosted := int64(n.logs.HostedPartitions())
	n.logger.Info("partition capacity", "replicas", c, "hosted", hosted, "nofile", limit, "files_per_partition", filesPerPartition)
	if msg := capacityShortfall(hosted, limit, int64(n.cfg.MaxBrokerPartitions)); msg != "" {
		n.logger.Error(msg, "hosted", hosted, "capacity", c, "nofile", limit)
	}
	return c
}

// capacityShortfall explains why a broker holding hosted partition
// replicas cannot serve them all with a file-descriptor limit of nofile
// and max.broker.partitions, or is "" when it can.
func capacityShortfall(hosted int64, nofile uint64, maxBrokerPartitions int64) string {
	c := partitionCapacity(nofile, maxBrokerPartitions)
	if c <= 0 || hosted <= c { // 0: no limit at all
		return ""
	}
	if fdCap := partitionCapacity(nofile, 0); nofile > 0 && hosted > fdCap {
		return fmt.Sprintf("the log dirs hold %d partition replicas but the file-descriptor limit (RLIMIT_NOFILE %d) leaves room for %d: "+
			"%d will be offline (KAFKA_STORAGE_ERROR) until the limit is raised to at least %d (ulimit -n, LimitNOFILE=, or the container's nofile ulimit)",
			hosted, nofile, fdCap, hosted-fdCap, nofileFor(hosted))
	}
	return fmt.Sprintf("the log dirs hold %d partition replicas, more than max.broker.partitions=%d: "+
		"no new replicas are placed here, and those beyond the limit may fail to open; raise max.broker.partitions or reassign partitions away",
		hosted, maxBrokerPartitions)
}

// nofileFor is the smallest file-descriptor limit whose capacity holds
// hosted partition replicas: the inverse of partitionCapacity.
func nofileFor(hosted int64) uint64 {
	// Capacity grows with the limit; search the smallest that holds
	// hosted (4*hosted+minFDReserve always does).
	lo, hi := uint64(1), 4*uint64(max(hosted, 1))+minFDReserve
	for lo < hi {
		mid := lo + (hi-lo)/2
		if partitionCapacity(mid, 0) >= hosted {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}
